// fuzz_mountinfo.cpp: mountinfo_proc_hidepid over arbitrary text. The answer
// decides whether proc = private-or-hidepid may fall back to the host /proc,
// so besides not crashing it must follow the topmost /proc mount.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proc/probe.hpp"

using namespace clihost;

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const bool hidden = mountinfo_proc_hidepid(text);
    // A "yes" must rest on a proc mount with the option actually present.
    if (hidden) check(text.find("/proc") != std::string::npos && text.find("hidepid=") != std::string::npos);
    // Whatever came before, a later mount on /proc wins (mount stacking):
    // one without hidepid exposes every process, one with it hides them.
    check(!mountinfo_proc_hidepid(text + "\n99 1 0:5 / /proc rw,nosuid - proc proc rw"));
    check(mountinfo_proc_hidepid(text + "\n99 1 0:5 / /proc rw,nosuid - proc proc rw,hidepid=invisible"));
    // A mount elsewhere does not change the answer.
    check(mountinfo_proc_hidepid(text + "\n98 1 0:6 / /proc2 rw - proc proc rw,hidepid=2") == hidden);
    return 0;
}
