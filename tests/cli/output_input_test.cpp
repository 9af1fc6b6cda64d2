// An output never replaces an input (cost_model/atomic_file.hpp): every command that writes files
// refuses, with exit 2 and before anything is written, an output that is a file it reads (scenario,
// hardware profile, model config, trace, base profile), also through a symbolic or a hard link; a
// refused or failed write says truly what was written. And messages stay bounded whatever the input
// holds (cost_model/bounded_message.hpp).
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cost_model/atomic_file.hpp"
#include "cost_model/bounded_message.hpp"
#include "cost_model/input_error.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"
#include "tools/cli.hpp"
#include "tools/input_paths.hpp"

namespace fs = std::filesystem;

namespace {

using namespace overlap::test;  // cli, CliResult, TempDir, read_text, write_text

std::string src(const std::string& rel) { return (fs::path(overlap::tools::source_dir()) / rel).string(); }

const std::string kScenario = gemm_collective_scenario("all_reduce") + "  - no_overlap\n";
const std::string kOperator[] = {"--gemm", "4096x4096x4096", "--primitive", "all_reduce", "--ranks", "4",
                                 "--search", "optimal"};

std::vector<std::string> tune_operator(const std::string& hardware) {
  std::vector<std::string> args = {"tune", "--hardware", hardware};
  args.insert(args.end(), std::begin(kOperator), std::end(kOperator));
  return args;
}

std::vector<std::string> plus(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

TEST_CASE("an output never replaces an input: every command refuses it, exit 2, the input as it was",
          "[outputs][inputs]") {
  TempDir d("outin");
  const std::string scen = d.write("s.yaml", kScenario);
  const std::string hw = d.write("hw.yaml", read_text(src("scenarios/hardware/h100-sxm-8x-nvswitch.yaml")));
  const std::string trace = d.write("t.json", read_text(src("tests/data/trace/rank0.json")));
  const std::string model = d.write("config.json", read_text(src("scenarios/models/llama-3.1-8b.json")));
  fs::create_symlink("s.yaml", d.file("link.yaml"));
  fs::create_hard_link(scen, d.file("hard.yaml"));
  // A scenario naming its profile by a path of its own: the output replaces a file the command reads
  // without the command line naming it.
  const std::string indirect = d.write("indirect.yaml", "hardware: hw.yaml\n" + kScenario.substr(kScenario.find('\n') + 1));
  struct Case {
    std::vector<std::string> args;
    std::string flag, input;
  };
  const std::string mlp = src("scenarios/llama3-70b-tp8-mlp.yaml");
  const std::vector<Case> cases = {
      {{"run", scen, "-o", scen}, "-o " + scen, scen},
      {{"run", scen, "--trace", d.file("link.yaml")}, "--trace " + d.file("link.yaml"), scen},
      {{"run", scen, "--graphviz", d.file("hard.yaml")}, "--graphviz " + d.file("hard.yaml"), scen},
      {{"run", scen, "--hardware", hw, "-o", hw}, "-o " + hw, "hw.yaml"},
      {{"run", indirect, "-o", hw}, "-o " + hw, "hw.yaml"},
      {{"run", mlp, "--scheme", "no_overlap", "--model", model, "-o", model}, "-o " + model, "config.json"},
      {{"sweep", scen, "--sweep", "workload.m=2048,4096", "-o", scen}, "-o " + scen, scen},
      {{"trace", trace, "-o", trace}, "-o " + trace, trace},
      {{"profile", "fit", trace, "--hardware", "h100-sxm-8x-nvswitch", "-o", trace}, "-o " + trace, trace},
      {{"profile", "fit", trace, "--hardware", "h100-sxm-8x-nvswitch", "-o", d.file("fit.yaml"), "--report", trace},
       "--report " + trace, trace},
      {{"profile", "fit", trace, "--hardware", hw, "-o", hw}, "-o " + hw, hw},
      {plus(tune_operator(hw), {"--export-flashoverlap", hw}), "--export-flashoverlap " + hw, hw},
      {plus(tune_operator(hw), {"-o", hw}), "-o " + hw, hw},
      {{"tune", scen, "-j", "1", "--export", "te-userbuffers", scen}, "--export " + scen, scen},
      {{"collective", "all_reduce", "--hardware", hw, "-e", "1M", "--export", "nccl-tuner", hw}, "--export " + hw, hw},
      {{"collective", "all_reduce", "--hardware", hw, "-e", "1M", "-o", hw}, "-o " + hw, hw},
  };
  const std::string scen_text = read_text(scen), hw_text = read_text(hw), trace_text = read_text(trace),
                    model_text = read_text(model);
  for (const Case& c : cases) {
    const CliResult r = cli(c.args);
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains(c.flag + " would replace"));
    CHECK_THAT(r.err, Catch::Contains(c.input));
    CHECK_THAT(r.err, Catch::Contains("(nothing was written)"));
    CHECK(read_text(scen) == scen_text);
    CHECK(read_text(hw) == hw_text);
    CHECK(read_text(trace) == trace_text);
    CHECK(read_text(model) == model_text);
    CHECK(fs::is_symlink(d.file("link.yaml")));
  }
  // Nothing else was left behind: no temporary, no checkpoint, no fitted profile.
  CHECK(d.entries() == std::vector<std::string>{"config.json", "hard.yaml", "hw.yaml", "indirect.yaml", "link.yaml",
                                                "s.yaml", "t.json"});
}

TEST_CASE("a sweep's checkpoint is an output too: it never replaces the scenario", "[outputs][inputs][sweep]") {
  TempDir d("outin");
  // The scenario is named like -o's checkpoint FILE.partial.
  const std::string scen = d.write("r.csv.partial", kScenario);
  const CliResult r = cli({"sweep", scen, "--sweep", "workload.m=2048,4096", "-o", d.file("r.csv")});
  INFO(r.err);
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("-o's checkpoint " + scen + " would replace"));
  CHECK(read_text(scen) == kScenario);
  CHECK_FALSE(fs::exists(d.file("r.csv")));
}

TEST_CASE("outputs a command reads back on purpose are still written", "[outputs][inputs]") {
  TempDir d("outin");
  const std::string scen = d.write("s.yaml", kScenario);
  // sweep --resume reads -o FILE to skip its points, then writes it whole.
  const std::string out = d.file("r.csv");
  REQUIRE(cli({"sweep", scen, "--sweep", "workload.m=2048,4096", "-o", out}).rc == 0);
  const std::string first = read_text(out);
  const CliResult resumed = cli({"sweep", scen, "--sweep", "workload.m=2048,4096", "-o", out, "--resume"});
  INFO(resumed.err);
  CHECK(resumed.rc == 0);
  CHECK(read_text(out) == first);
  // validate --record reads DIR/validation.json (the figures it is held to) and writes it again.
  fs::copy(src("tests/data/calibrate/fixture-h100"), d.path / "res", fs::copy_options::recursive);
  const CliResult rec = cli({"validate", d.file("res"), "--record"});
  INFO(rec.err);
  CHECK(rec.rc == 0);
  CHECK_THAT(rec.err, Catch::Contains("wrote " + (d.path / "res" / "validation.json").string()));
}

TEST_CASE("a commit that fails part way says which outputs it wrote", "[outputs]") {
  TempDir d("outin");
  overlap::StagedOutputs staged;
  staged.stage(d.file("a.txt"), "a");
  staged.stage(d.file("b.txt"), "b");
  // b.txt turns into a directory with an entry after it was staged: the rename onto it fails.
  fs::create_directories(d.path / "b.txt" / "x");
  try {
    staged.commit();
    FAIL("commit succeeded");
  } catch (const overlap::OutputError& e) {
    REQUIRE(e.written() == std::vector<std::string>{d.file("a.txt")});
    CHECK(overlap::written_note(e) == "(" + d.file("a.txt") + " was written before this failure; the other outputs "
                                                              "were not)");
  }
  CHECK(read_text(d.file("a.txt")) == "a");
  CHECK(overlap::written_note(overlap::OutputError("x")) == "(nothing was written)");
}

TEST_CASE("no log, no refusal: outside the CLI every path may be written", "[outputs][inputs]") {
  TempDir d("outin");
  const std::string f = d.write("f.txt", "old");
  overlap::note_input_file(f, "scenario");  // no log open: nothing noted
  overlap::write_file_atomically(f, "new");
  CHECK(read_text(f) == "new");
  {
    overlap::InputFileLog log;
    overlap::note_input_file(f, "scenario");
    CHECK_THROWS_AS(overlap::write_file_atomically(f, "newer"), overlap::OutputError);
    CHECK_THROWS_AS(overlap::InputFileLog(), std::logic_error);  // one log at a time
    overlap::forget_input_files("scenario");
    overlap::write_file_atomically(f, "newer");
  }
  CHECK(read_text(f) == "newer");
}

TEST_CASE("bounded_message: a long word is cut at 120 characters and the rest counted", "[messages]") {
  using overlap::bounded_message;
  // 10,000,000 characters: the first 120 kept, 9,999,880 counted (exact: 10,000,000 - 120).
  const std::string big(10'000'000, 'x');
  CHECK(bounded_message("got " + big + " here") == "got " + std::string(120, 'x') + " ... (9,999,880 more characters) here");
  CHECK(bounded_message(std::string(121, 'y')) == std::string(120, 'y') + " ... (1 more character)");
  CHECK(bounded_message(std::string(120, 'y')) == std::string(120, 'y'));
  // A path is kept whole up to PATH_MAX.
  const std::string path = "/" + std::string(4095, 'p');
  CHECK(bounded_message("file " + path) == "file " + path);
  // Cut between UTF-8 characters: 200 two-byte characters keep 120 of them (240 bytes), 80 counted.
  std::string wide;
  for (int i = 0; i < 200; ++i) wide += "\xc3\xa9";
  const std::string cut = bounded_message(wide);
  CHECK(cut.substr(0, 240) == wide.substr(0, 240));
  CHECK(cut.substr(240) == " ... (80 more characters)");
  // Many short words: the first 4500 and the last 500 characters kept, the middle counted.
  std::string words;
  for (int i = 0; i < 100'000; ++i) words += "ab ";
  const std::string bounded = bounded_message(words + "end");
  CHECK(bounded.size() < 5100);
  CHECK(bounded.substr(0, 4500) == words.substr(0, 4500));
  CHECK(bounded.ends_with(" ... " + words.substr(words.size() - 497) + "end"));
  CHECK_THAT(bounded, Catch::Contains("(295,003 more characters)"));  // 300,003 - 4,500 - 500
  // Idempotent: a bounded message is its own bound.
  CHECK(bounded_message(bounded) == bounded);
  CHECK(bounded_message(bounded_message(big)) == bounded_message(big));
  // A NUL is written as \0, so what() (a C string) keeps what follows it; still idempotent.
  const std::string with_nul("a\0b", 3);
  CHECK(bounded_message(with_nul) == "a\\0b");
  CHECK(bounded_message(bounded_message(with_nul)) == bounded_message(with_nul));
  CHECK(overlap::bounded_list({"1", "2", "3"}, 2) == "1, 2 and 1 more");
  CHECK(overlap::bounded_list({"1", "2"}, 2) == "1, 2");
}

TEST_CASE("a 1 MB scalar gives a message of one line, naming file, line and key", "[messages]") {
  TempDir d("outin");
  // 1 MB, not 10: yaml-cpp scans a scalar at about 0.3 s per MB, the sanitizer build slower.
  const std::string big(1'000'000, '7');
  const std::string scen = d.write("s.yaml", "hardware: h100-sxm-8x-nvswitch\nworkload:\n  kind: gemm_collective\n"
                                             "  tp: 4\n  m: " + big + "\n  n: 4096\n  k: 2048\n  primitive: all_reduce\n"
                                             "schemes: [no_overlap]\n");
  const CliResult r = cli({"run", scen});
  INFO(r.err.substr(0, 500));
  CHECK(r.rc == 2);
  CHECK(r.err.size() < 400);
  CHECK_THAT(r.err, Catch::Contains(scen + ":5: workload.m:"));
  CHECK_THAT(r.err, Catch::Contains(std::string(120, '7') + " ... ("));
  CHECK_THAT(r.err, Catch::Contains(" more characters)"));
  // The same through --set, where the flag's text quotes the value too.
  const CliResult s = cli({"run", scen, "--set", "workload.m=" + std::string(100'000, 'q')});
  CHECK(s.rc == 2);
  CHECK(s.err.size() < 600);
  CHECK_THAT(s.err, Catch::Contains("workload.m"));
  // An InputError keeps its parts bounded too (what the Python module reports).
  const overlap::InputError e("f.yaml", 3, "workload.m", "got " + std::string(10'000'000, '7'));
  CHECK(e.message().size() < 200);
  CHECK(std::string(e.what()).size() < 220);
}

TEST_CASE("a NUL in a scenario value shows in the message with what follows it", "[messages]") {
  TempDir d("outin");
  // YAML's "\0" escape puts a NUL in the value; the message quotes it as \0 and keeps the rest.
  const std::string scen = d.write("s.yaml", "hardware: h100-sxm-8x-nvswitch\nworkload:\n  kind: gemm_collective\n"
                                             "  tp: 4\n  m: 4096\n  n: 4096\n  k: 2048\n  primitive: \"all\\0tail\"\n");
  const CliResult r = cli({"run", scen});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains(scen + ":8: workload.primitive") && Catch::EndsWith("(got all\\0tail)\n"));
}

TEST_CASE("a trace of world_size 16777215 warns in one short line", "[messages][trace]") {
  TempDir d("outin");
  std::string text = read_text(src("tests/data/trace/rank0.json"));
  const std::string two = "\"world_size\": 2";
  REQUIRE(text.find(two) != std::string::npos);
  text.replace(text.find(two), two.size(), "\"world_size\": 16777215");
  const std::string trace = d.write("t.json", text);
  const CliResult r = cli({"trace", trace});
  INFO(r.err);
  CHECK(r.rc == 0);
  // Rank 0 given: one range missing, 1 to 16777214.
  CHECK_THAT(r.err, Catch::Contains("warning: no trace of rank(s) 1-16777214 (world_size 16777215)"));
  CHECK(r.err.size() < 300);
}
