// One name table per enum (cost_model/enum_names.hpp): the generic lookups, and every public name /
// parse pair built on them spelling each value as the inputs and outputs do (profiles, scenarios,
// NCCL_ALGO / NCCL_PROTO, --schedule, tune --search).
#include <catch2/catch.hpp>

#include <array>
#include <optional>
#include <string>
#include <utility>

#include "cost_model/collective_primitive.hpp"
#include "cost_model/enum_names.hpp"
#include "cost_model/hardware_profile.hpp"
#include "cost_model/nccl_constants.hpp"
#include "sim/schemes/commfuse_schedule.hpp"
#include "sim/tune_wave_groups.hpp"
#include "sim/workload_kind.hpp"
#include "tools/papers.hpp"

using namespace overlap;

namespace {

enum class Colour { red, green, blue };
constexpr std::array kColourNames{std::pair{Colour::red, "red"}, std::pair{Colour::green, "Green"},
                                  std::pair{Colour::blue, "blue"}};
static_assert(rows_in_enum_order(kColourNames));
static_assert(!rows_in_enum_order(std::array{std::pair{Colour::green, "green"}, std::pair{Colour::red, "red"}}));
static_assert(!rows_in_enum_order(std::array{std::pair{Colour::red, "red"}, std::pair{Colour::red, "rouge"}}));

// Every value of an enum with `count` values: its name parses back to it; value `count` (past the
// last name) is "?".
template <typename E, typename Name, typename Parse>
void check_round_trip(int count, Name name, Parse parse) {
  for (int i = 0; i < count; ++i) {
    const E v = static_cast<E>(i);
    INFO(name(v));
    CHECK(std::string(name(v)) != "?");
    CHECK(parse(name(v)) == v);
  }
  CHECK(std::string(name(static_cast<E>(count))) == "?");
}

}  // namespace

TEST_CASE("name_of and parse_name read the same row", "[enum_names]") {
  CHECK(std::string(name_of(kColourNames, Colour::green)) == "Green");
  CHECK(std::string(name_of(kColourNames, static_cast<Colour>(7))) == "?");
  CHECK(parse_name(kColourNames, "blue") == Colour::blue);
  CHECK_FALSE(parse_name(kColourNames, "green"));  // exact by default
  CHECK_FALSE(parse_name(kColourNames, "blu"));
  CHECK_FALSE(parse_name(kColourNames, "blue "));
  CHECK_FALSE(parse_name(kColourNames, std::string("blue\0x", 6)));
  CHECK_FALSE(parse_name(kColourNames, ""));
  CHECK(parse_name(kColourNames, "GREEN", NameCase::ignore_ascii_case) == Colour::green);
  CHECK(parse_name(kColourNames, "bLuE", NameCase::ignore_ascii_case) == Colour::blue);
  CHECK_FALSE(parse_name(kColourNames, "GREE", NameCase::ignore_ascii_case));
  CHECK_FALSE(parse_name(kColourNames, "greens", NameCase::ignore_ascii_case));
}

TEST_CASE("every enum's name parses back to it", "[enum_names]") {
  check_round_trip<DType>(4, dtype_name, parse_dtype);
  check_round_trip<FabricNodeKind>(7, fabric_node_kind_name, parse_fabric_node_kind);
  check_round_trip<Transport>(static_cast<int>(std::size(kAllTransports)), transport_name, parse_transport);
  check_round_trip<CollectivePrimitive>(6, collective_primitive_name, parse_collective_primitive);
  check_round_trip<NcclAlgorithm>(kNcclAlgorithms + 1, nccl_algorithm_name, [](const std::string& s) {
    return s == "SendRecv" ? std::optional(NcclAlgorithm::SendRecv) : parse_nccl_algorithm(s);
  });
  check_round_trip<NcclProtocol>(kNcclProtocols, nccl_protocol_name, parse_nccl_protocol);
  check_round_trip<NcclHw>(kNcclHw, nccl_hw_name, parse_nccl_hw);
  check_round_trip<NcclArch>(4, nccl_arch_name, parse_nccl_arch);
  check_round_trip<sim::CommFuseSchedule>(3, sim::commfuse_schedule_name, sim::parse_commfuse_schedule);
  check_round_trip<sim::WaveGroupSearch>(4, sim::wave_group_search_name, sim::parse_wave_group_search);
  check_round_trip<sim::WorkloadKind>(7, sim::workload_kind_name, sim::parse_workload_kind);
}

TEST_CASE("names are spelt as inputs and outputs spell them", "[enum_names]") {
  CHECK(std::string(dtype_name(DType::bf16)) == "bf16");
  CHECK(std::string(fabric_node_kind_name(FabricNodeKind::network_switch)) == "network_switch");
  CHECK(std::string(transport_name(Transport::copy_engine)) == "copy_engine");
  CHECK(std::string(collective_primitive_name(CollectivePrimitive::reduce_scatter)) == "reduce_scatter");
  CHECK(std::string(nccl_algorithm_name(NcclAlgorithm::NVLSTree)) == "NVLSTree");
  CHECK(std::string(nccl_algorithm_name(NcclAlgorithm::SendRecv)) == "SendRecv");
  CHECK(std::string(nccl_protocol_name(NcclProtocol::LL128)) == "LL128");
  CHECK(std::string(nccl_arch_name(NcclArch::blackwell)) == "blackwell");
  CHECK(std::string(sim::commfuse_schedule_name(sim::CommFuseSchedule::circular)) == "circular");
  CHECK(std::string(sim::wave_group_search_name(sim::WaveGroupSearch::exhaustive)) == "exhaustive");
  CHECK(std::string(sim::workload_kind_name(sim::WorkloadKind::attention_ulysses)) == "attention_ulysses");
  CHECK(sim::workload_kind_list() ==
        "gemm_collective, mlp_tpsp, attention_tpsp, attention_ulysses, decode_stack, transformer, moe");
  CHECK(std::string(tools::papers::verdict_name(tools::papers::Verdict::explained)) == "explained");
}

TEST_CASE("NCCL_ALGO / NCCL_PROTO ignore case; the other names do not", "[enum_names]") {
  CHECK(parse_nccl_algorithm("nvlstree") == NcclAlgorithm::NVLSTree);
  CHECK(parse_nccl_algorithm("RING") == NcclAlgorithm::Ring);
  CHECK(parse_nccl_protocol("ll128") == NcclProtocol::LL128);
  CHECK(parse_nccl_protocol("SIMPLE") == NcclProtocol::Simple);
  // SendRecv has a name (all-to-all plans print it) but is no NCCL_ALGO value.
  CHECK_FALSE(parse_nccl_algorithm("SendRecv"));
  CHECK_FALSE(parse_nccl_algorithm("sendrecv"));
  CHECK_FALSE(parse_nccl_algorithm("Rings"));
  CHECK_FALSE(parse_dtype("BF16"));
  CHECK_FALSE(parse_transport("SM_COPY"));
  CHECK_FALSE(parse_collective_primitive("All_Reduce"));
  CHECK_FALSE(sim::parse_workload_kind("MoE"));
  CHECK_FALSE(parse_nccl_hw("NVLink"));
  CHECK_FALSE(parse_nccl_arch("Hopper"));
  CHECK_FALSE(parse_fabric_node_kind("GPU"));
  CHECK_FALSE(sim::parse_commfuse_schedule("Ring"));
  CHECK_FALSE(sim::parse_wave_group_search("Optimal"));
}
