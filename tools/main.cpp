// overlap-sim: the command-line program. Everything but the process lives in tools/cli.cpp
// (run_cli), so the tests run the same code in-process.
#include <cstddef>
#include <iostream>
#include <new>

#ifdef OVERLAP_CLI_MIMALLOC
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>

#include <mimalloc.h>
#endif

#include "tools/cli.hpp"

#ifdef OVERLAP_CLI_MIMALLOC
// The global allocation functions ([new.delete], replaceable), on mimalloc, throwing when memory runs
// out. mimalloc's own operator new calls abort() when no std::new_handler is installed, and as a C
// library it cannot see one (it looks the handler up through a weak stub of its own), so a run that
// outgrew its memory died on SIGABRT without a word. These take their memory from mimalloc as its
// operator new did and throw overlap::tools::OutOfMemory (a std::bad_alloc) instead: the CLI reports
// it with the command it was running, exit 2 (tools/cli.hpp).
//
// Unwinding needs memory too (a destructor may allocate: nlohmann::json's destroy keeps a stack of the
// values it frees), so 64 MiB of address space is held back from the start and given back at the
// first failure: two of mimalloc's 32 MiB segments, for the destructors and the message. When memory
// runs out where nothing can be thrown (during unwinding, in a noexcept function) the terminate
// handler still says so, with the command line, and exits 2.
namespace {

constexpr std::size_t kReserveBytes = 64u << 20;
void* reserve = nullptr;
int saved_argc = 0;
char** saved_argv = nullptr;

void release_reserve() {
  if (reserve) ::munmap(reserve, kReserveBytes);
  reserve = nullptr;
}

void* allocate(std::size_t bytes) {
  if (void* p = mi_malloc(bytes)) return p;
  release_reserve();
  throw overlap::tools::OutOfMemory(bytes);
}

void* allocate_aligned(std::size_t bytes, std::align_val_t align) {
  if (void* p = mi_malloc_aligned(bytes, static_cast<std::size_t>(align))) return p;
  release_reserve();
  throw overlap::tools::OutOfMemory(bytes);
}

void say(const char* text, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<std::size_t>(w);
  }
}

// Out of memory where no exception could travel: the message written without allocating (each word of
// the command line cut to a line's worth, as every message is: cost_model/bounded_message.hpp).
[[noreturn]] void terminate_handler() {
  bool oom = false;
  if (const std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      oom = true;
    } catch (...) {
    }
  }
  if (!oom) {
    say("overlap-sim: internal error: terminated\n", 39);
    std::abort();
  }
  const char head[] = "overlap-sim: error: out of memory while running 'overlap-sim";
  say(head, sizeof head - 1);
  for (int i = 1; i < saved_argc; ++i) {
    say(" ", 1);
    say(saved_argv[i], std::min<std::size_t>(std::strlen(saved_argv[i]), 120));
  }
  const char tail[] = "': the process may use no more memory (ulimit -v, a container's limit, or the machine's)\n";
  say(tail, sizeof tail - 1);
  ::_exit(overlap::tools::kExitUsage);
}

}  // namespace

void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return mi_malloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return mi_malloc(n); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate_aligned(n, a); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate_aligned(n, a); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return mi_malloc_aligned(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return mi_malloc_aligned(n, static_cast<std::size_t>(a));
}

void operator delete(void* p) noexcept { mi_free(p); }
void operator delete[](void* p) noexcept { mi_free(p); }
void operator delete(void* p, std::size_t n) noexcept { mi_free_size(p, n); }
void operator delete[](void* p, std::size_t n) noexcept { mi_free_size(p, n); }
void operator delete(void* p, const std::nothrow_t&) noexcept { mi_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { mi_free(p); }
void operator delete(void* p, std::align_val_t a) noexcept { mi_free_aligned(p, static_cast<std::size_t>(a)); }
void operator delete[](void* p, std::align_val_t a) noexcept { mi_free_aligned(p, static_cast<std::size_t>(a)); }
void operator delete(void* p, std::size_t n, std::align_val_t a) noexcept {
  mi_free_size_aligned(p, n, static_cast<std::size_t>(a));
}
void operator delete[](void* p, std::size_t n, std::align_val_t a) noexcept {
  mi_free_size_aligned(p, n, static_cast<std::size_t>(a));
}
void operator delete(void* p, std::align_val_t a, const std::nothrow_t&) noexcept {
  mi_free_aligned(p, static_cast<std::size_t>(a));
}
void operator delete[](void* p, std::align_val_t a, const std::nothrow_t&) noexcept {
  mi_free_aligned(p, static_cast<std::size_t>(a));
}
#endif

int main(int argc, char** argv) {
#ifdef OVERLAP_CLI_MIMALLOC
  // The process's allocator (tools/CMakeLists.txt). A run frees each scheme's task graph and builds
  // the next at once: handing those pages back to the kernel only to fault them in again cost about
  // 3 % of a training step's wall time (docs/performance.md).
  mi_option_disable(mi_option_allow_decommit);
  // Address space only (PROT_NONE, no pages): nothing of the machine's memory is taken.
  reserve = ::mmap(nullptr, kReserveBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserve == MAP_FAILED) reserve = nullptr;
  saved_argc = argc;
  saved_argv = argv;
  std::set_terminate(terminate_handler);
#endif
  return overlap::tools::run_cli(argc, argv, std::cout, std::cerr);
}
