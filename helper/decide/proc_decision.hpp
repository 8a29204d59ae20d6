// proc_decision.hpp: the one owner of the /proc decision. From the policy's
// `proc` mode and what the host probe found, decide what the jail mounts on
// /proc, or refuse; the same rules judge the trial that proc = private
// defers to the jail's first tenant process, and `check`'s report. Pure.
#pragma once

#include <string>
#include <vector>

#include "decide/config.hpp"
#include "decide/host_facts.hpp"
#include "base/result.hpp"

namespace clihost {

struct ProcDecision {
    bool private_proc{false};       // bwrap --proc /proc (else the host's, read-only)
    // proc = private with the host trial deferred: the jail's first tenant
    // process proves, right before exec, that a fresh procfs can be mounted,
    // or refuses (exit 3) with judge_trial's message.
    bool prove_before_exec{false};
    std::string source() const { return private_proc ? "private" : "host"; }
    std::vector<std::string> warnings;  // each is audit-logged at launch
};

// Does planning need the host trial now? Only proc = private can leave it
// to the jail (its bwrap argv is the same either way).
bool proc_needs_host_trial(ProcMode mode);

// The decision, or a refusal (exit 3) naming what the host lacks.
Result<ProcDecision> decide_proc(ProcMode mode, const HostProbe& probe);

// The deferred trial's verdict for proc = private, with the same messages
// decide_proc gives when the trial ran before planning.
Status judge_trial(const TrialResult& trial);

}  // namespace clihost
