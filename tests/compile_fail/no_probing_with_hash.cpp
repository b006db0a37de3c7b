// expect: no_probing only works with identity_hash
#include <gpuagg/groupby.hpp>
int main() {
  auto q = gpuagg::select<gpuagg::hashing<gpuagg::multiply_shift, gpuagg::no_probing>>(gpuagg::count());
  (void)q;
}
