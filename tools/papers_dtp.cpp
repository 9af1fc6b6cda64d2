#include "tools/papers.hpp"
namespace overlap::tools::papers {
std::vector<PaperRow> dtp_rows(ScenarioRunner&) { return {}; }
}
