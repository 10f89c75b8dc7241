#include "domain/acceptance_source.hpp"

namespace eaglesim {

const char* to_string(AcceptanceSource::Kind kind) {
  switch (kind) {
    case AcceptanceSource::Kind::measured_flag: return "measured_flag";
    case AcceptanceSource::Kind::measured_table: return "measured_table";
    case AcceptanceSource::Kind::tree_model: return "tree_model";
  }
  return "?";
}

}  // namespace eaglesim
