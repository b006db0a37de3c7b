// The correctness matrix for std::uint32_t keys (see aggregate_matrix.hpp).
#include "aggregate_matrix.hpp"

using uint32_key = std::uint32_t;
GPUAGG_AGGREGATE_MATRIX(uint32_key);
