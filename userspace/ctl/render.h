// Rendering helpers shared by netqosctl's subcommands: proto pieces to JSON values and to the
// short strings the tables print.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "resourceplugin/v1alpha1/api.pb.h"

namespace netqos::ctl {

namespace rp = ::resourceplugin::v1alpha1;

nlohmann::json ToJson(const google::protobuf::Map<std::string, std::string>& m);
nlohmann::json ToJson(const rp::TopologyHint& hint);
// null for an entry without a value (nil), else the list (possibly empty).
nlohmann::json ToJson(const rp::ResourceHintsEntry& entry);
nlohmann::json ToJson(const rp::TopologyAwareQuantity& q);
nlohmann::json ToJson(const rp::ResourceAllocation& alloc);

// "0,1"; "-" for a hint without nodes.
std::string NodesText(const rp::TopologyHint& hint);
// 1500 -> "1500", 0.5 -> "0.5".
std::string NumberText(double v);
// "k=v,k2=v2"; "-" when empty.
std::string MapText(const google::protobuf::Map<std::string, std::string>& m);

// Prints what one hint entry says, telling nil and empty apart.
void PrintHintsEntry(const rp::ResourceHintsEntry& entry, std::ostream& out);

}  // namespace netqos::ctl
