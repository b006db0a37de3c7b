// expect: identity_hash maps each key to its own bucket
#include <gpuagg/groupby.hpp>
int main() {
  auto q = gpuagg::select<gpuagg::hashing<gpuagg::identity_hash, gpuagg::linear_probing>>(gpuagg::count());
  (void)q;
}
