// The correctness matrix for std::int64_t keys (see aggregate_matrix.hpp).
#include "aggregate_matrix.hpp"

using int64_key = std::int64_t;
GPUAGG_AGGREGATE_MATRIX(int64_key);
