#pragma once
// Shared by the unit tests of the keyed calibration tables (transition_us, allreduce_context_us):
// a topology whose table `table` holds only {key: value} is rejected with an InputError naming
// the file, the table and `says`.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "topology/topology.hpp"

namespace eaglesim::test_support {

inline void expect_calibration_table_rejects(const std::string& topology_text, const char* table, const char* key,
                                             const nlohmann::json& value, const char* says) {
  nlohmann::json j = nlohmann::json::parse(topology_text);
  j["calibration"][table] = nlohmann::json::object();
  j["calibration"][table][key] = value;
  try {
    parse_topology(j, "cal.json");
    ADD_FAILURE() << "expected InputError for " << table << " key " << key;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cal.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(table), std::string::npos) << msg;
    EXPECT_NE(msg.find(says), std::string::npos) << msg;
  }
}

}  // namespace eaglesim::test_support
