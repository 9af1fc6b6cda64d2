// overlap-calibrate-profile DIR [--schema 2] [--name NAME]: writes DIR/profile.yaml from
// DIR/measurements.json and DIR/environment.json (calibrate/core/profile_writer.hpp). The CUDA
// driver does the same at the end of a run; this program redoes it on any machine.
// With --schemes: DIR/schemes.json's virtual nodes' profiles (profile_virtual_t<T>_<link>.yaml),
// from the node measurements the scheme runner stored in it, and gpu.gemm_full_rate_sms and the host link's PCIe rate
// from the physical GPU's calibration in DIR/.. when there is one.
// Exit status: 0 written, 2 usage or input error (file:line: key), 1 internal error.
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "calibrate/core/measurement.hpp"
#include "cost_model/atomic_file.hpp"
#include "calibrate/core/profile_writer.hpp"
#include "calibrate/core/scheme_config.hpp"
#include "cost_model/input_error.hpp"

int main(int argc, char** argv) {
  std::string dir;
  bool schemes = false;
  overlap::calibrate::ProfileOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--schema" || a == "--name") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--name") {
        options.name = v;
      } else if (v == "2") {
        options.schema = 2;
      } else {
        std::fprintf(stderr, "overlap-calibrate-profile: --schema must be 2 (schema 1 is no longer read by the loader)\n");
        return 2;
      }
    } else if (a == "--schemes") {
      schemes = true;
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: overlap-calibrate-profile DIR [--schema 2] [--name NAME] [--schemes]\n");
      return 0;
    } else if (dir.empty() && a[0] != '-') {
      dir = a;
    } else {
      std::fprintf(stderr, "overlap-calibrate-profile: unexpected argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: overlap-calibrate-profile DIR [--schema 2] [--name NAME]\n");
    return 2;
  }
  try {
    if (schemes) {
      namespace cal = overlap::calibrate;
      const cal::SchemeRunSet runs = cal::load_scheme_runs(dir + "/schemes.json");
      // What the physical GPU gives each node comes from its calibration in DIR/..
      // (calibrate/results/<gpu>-<host>/), when it has one. load_scheme_runs checked every node
      // (its profile a plain file name, its measurements).
      for (const auto& node : runs.virtual_nodes) {
        const std::string file = dir + "/" + node.profile;
        overlap::write_file_atomically(file, cal::write_virtual_node_profile_yaml(node, dir + "/..", options));
        std::printf("wrote %s\n", file.c_str());
      }
      return 0;
    }
    const auto set = overlap::calibrate::load_measurement_dir(dir);
    // The environment is optional to validate, not to a profile: the GPU's SM count is there.
    if (!std::filesystem::exists(dir + "/environment.json"))
      throw overlap::InputError(dir + "/environment.json", 0, "",
                                "missing: a profile needs the GPU's sm_count, which the calibration writes there");
    overlap::write_file_atomically(dir + "/profile.yaml", overlap::calibrate::write_profile_yaml(set, options));
    std::printf("wrote %s/profile.yaml\n", dir.c_str());
    return 0;
  } catch (const overlap::InputError& e) {
    std::fprintf(stderr, "overlap-calibrate-profile: error: %s\n", e.what());
    return 2;
  } catch (const std::runtime_error& e) {
    // The writer's refusals (no sm_count, no GEMM rate, no D2D transfers): the input lacks them.
    std::fprintf(stderr, "overlap-calibrate-profile: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    // Anything else is this program's bug, not the input's (the exit status says so).
    std::fprintf(stderr, "overlap-calibrate-profile: internal error: %s\n", e.what());
    return 1;
  }
}
