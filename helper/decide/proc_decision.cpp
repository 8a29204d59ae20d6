// proc_decision.cpp: /proc rules of the three modes.
#include "decide/proc_decision.hpp"

namespace clihost {
namespace {

Error no_userns(const std::string& detail) { return fail(Exit::host, "user namespaces are unavailable: " + detail); }

Error no_private_proc(const std::string& detail) {
    return fail(Exit::host, "cannot mount a private /proc here (" + detail + "); refusing (proc = private)");
}

}  // namespace

bool proc_needs_host_trial(ProcMode mode) { return mode != ProcMode::private_only; }

Result<ProcDecision> decide_proc(ProcMode mode, const HostProbe& probe) {
    if (probe.trial_deferred && proc_needs_host_trial(mode))
        return fail(Exit::internal, "the namespace trial was deferred for a mode that needs it");
    if (!probe.trial_deferred && !probe.user_namespaces) return no_userns(probe.trial_detail);
    ProcDecision d;
    switch (mode) {
        case ProcMode::private_only:
            if (!probe.trial_deferred && !probe.fresh_proc) return no_private_proc(probe.trial_detail);
            d.private_proc = true;
            d.prove_before_exec = probe.trial_deferred;
            break;
        case ProcMode::private_or_hidepid:
            // The host /proc is only acceptable when it hides other users' processes.
            if (probe.fresh_proc) d.private_proc = true;
            else if (!probe.host_proc_hidepid)
                return fail(Exit::host, "cannot mount a private /proc (" + probe.trial_detail +
                                            ") and host /proc lacks hidepid=invisible; refusing");
            break;
        case ProcMode::inherit:
            d.warnings.emplace_back("proc = inherit: the jail sees the host /proc");
            break;
    }
    return d;
}

Status judge_trial(const TrialResult& trial) {
    if (trial.process_limit) return fail(Exit::host, "cannot start the jail: " + trial.detail);
    if (!trial.user_namespaces) return no_userns(trial.detail);
    if (!trial.fresh_proc) return no_private_proc(trial.detail);
    return ok_status();
}

}  // namespace clihost
