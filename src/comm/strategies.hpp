#pragma once
// The built-in strategies' specs, one cost-model file each (reference.cpp: bench-comm's baseline,
// which has no cost model). comm/strategy_list.cpp orders them.
#include "comm/strategy_spec.hpp"

namespace eaglesim {

const StrategySpec& nccl_spec();
const StrategySpec& oneshot_spec();       // the pull kernel
const StrategySpec& oneshot_push_spec();  // the push kernel, a bench-comm variant
const StrategySpec& twoshot_spec();
const StrategySpec& fused_spec();
const StrategySpec& quant_spec();
const StrategySpec& ideal_spec();
const StrategySpec& auto_spec();
const StrategySpec& sglang_spec();
const StrategySpec& vllm_spec();
const StrategySpec& reference_spec();

}  // namespace eaglesim
