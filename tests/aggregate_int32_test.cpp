// The correctness matrix for std::int32_t keys (see aggregate_matrix.hpp).
#include "aggregate_matrix.hpp"

using int32_key = std::int32_t;
GPUAGG_AGGREGATE_MATRIX(int32_key);
