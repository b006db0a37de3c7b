// The correctness matrix for std::uint64_t keys (see aggregate_matrix.hpp).
#include "aggregate_matrix.hpp"

using uint64_key = std::uint64_t;
GPUAGG_AGGREGATE_MATRIX(uint64_key);
