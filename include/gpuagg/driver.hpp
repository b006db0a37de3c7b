#pragma once
// The block-wise driver: declared in driver/aggregation_driver.hpp, its jobs in driver/*.hpp.
#include "driver/aggregation_driver.hpp"
