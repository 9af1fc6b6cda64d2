#include "tools/papers.hpp"
namespace overlap::tools::papers {
std::vector<PaperRow> async_tp_rows(ScenarioRunner&) { return {}; }
}
