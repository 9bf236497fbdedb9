// Every section of a validator's configuration: what the node is created
// with and what each window step reads (window.h takes it from here, not
// from node.h, so the steps do not depend on the node that runs them).
#pragma once

#include "crucible/chain/chain_options.h"
#include "crucible/common/model_config.h"
#include "crucible/protocol/options.h"
#include "crucible/storage/storage_options.h"
#include "crucible/validator/validator_options.h"

namespace crucible::validator {

struct ValidatorNodeOptions {
  protocol::Options protocol;
  chain::ChainOptions chain;
  storage::StorageOptions storage;
  model::ModelConfig model;
  ValidatorOptions validator;
  ApiOptions api;
};

}  // namespace crucible::validator
