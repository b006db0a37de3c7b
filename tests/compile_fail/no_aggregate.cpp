// expect: every output needs an aggregate
#include <gpuagg/groupby.hpp>
int main() {
  auto q = gpuagg::select(gpuagg::lit<1>);
  (void)q;
}
