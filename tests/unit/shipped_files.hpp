#pragma once
// The model configs (models/llm/NAME.json) and topology presets (models/topologies/NAME.json)
// shipped in the repository, read by name for tests.
#include <string>

#include "model/model_config.hpp"
#include "topology/topology.hpp"

namespace eaglesim::test {

inline ModelConfig shipped_model(const std::string& name) {
  return read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/" + name + ".json");
}

inline Topology shipped_topology(const std::string& name) {
  return read_topology(std::string(EAGLESIM_REPO) + "/models/topologies/" + name + ".json");
}

}  // namespace eaglesim::test
