// expect: a tuner_params field breaks its rule
#include <gpuagg/groupby.hpp>
int main() {
  // p must be greater than 1 (Algorithm 1, line 6): the tuner's static_assert rejects it.
  gpuagg::tuner<gpuagg::tuner_params{.search = {.prune = 1.0}}> tuner;
  (void)tuner;
}
