// query.cpp: a tenant's query jail, started by its supervisor (query.hpp).
#include "proc/query.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/fd_pass.hpp"
#include "base/log.hpp"
#include "decide/plan.hpp"
#include "decide/tenant_output.hpp"
#include "proc/jail_start.hpp"
#include "proc/supervise.hpp"

namespace clihost {
namespace {

constexpr std::size_t kMaxQueryOutput = std::size_t{64} * 1024;

// A pipe whose read end (ours) does not block and whose write end (the
// jail's) does.
bool query_pipe(UniqueFd& read_end, UniqueFd& write_end) {
    int fds[2] = {-1, -1};
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    read_end.reset(fds[0]);
    write_end.reset(fds[1]);
    const int fl = ::fcntl(fds[0], F_GETFL);
    return fl >= 0 && ::fcntl(fds[0], F_SETFL, fl | O_NONBLOCK) == 0;
}

// The query's plan: the session jail's environment (its first caller's
// extra_env values, PAM's), so that its tmux client speaks as its tmux
// server was started.
Result<Plan> query_plan(const OwnerContext& ctx, HandoverKind kind, const std::string& session) {
    if (!is_query(kind)) return fail(Exit::internal, "a query jail lists or kills");
    const bool list = kind == HandoverKind::list;
    const Request req{list ? JailAction::list_sessions : JailAction::kill_session, list ? "" : session, {}};
    return build_plan(ctx.start.policy, ctx.start.tenant, req, ctx.start.probe, ctx.start.caller_env, ctx.pam_env);
}

const char* kind_name(HandoverKind kind) { return kind == HandoverKind::list ? "list" : "kill"; }

// A query jail for `plan`: stdin /dev/null, stdout a pipe whose reading
// end goes to `out`, stderr a pipe to `*err` (or /dev/null), in its own
// allowance (JailPlacement::query): a tenant at its tasks_max still has its
// sessions listed and killed. Its watcher's pid.
Result<pid_t> launch_query_jail(const OwnerContext& ctx, const Plan& plan, UniqueFd& out, UniqueFd* err) {
    const UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
    UniqueFd out_w, err_w;
    if (!null.valid() || !query_pipe(out, out_w) || (err != nullptr && !query_pipe(*err, err_w)))
        return fail(Exit::internal, "cannot make a query jail's pipes");
    auto start = QueryJailStart::make(plan, Stdio{{null.get(), out_w.get(), err != nullptr ? err_w.get() : null.get()}});
    if (!start) return start.error();
    JailPlacement place = ctx.place;
    place.query = true;
    return start_jail(start.value(), TenantContext{&ctx.limits, &place});
}

// One tmux command of the supervisor's own (an OOM notice's) in a query
// jail: its stdout (at most 64 KiB) once the jail has ended, or "" when it
// did not end within kTenantQueryDeadlineMs (then it is killed).
std::string run_tmux_command(const OwnerContext& ctx, std::vector<std::string> command) {
    auto plan = query_plan(ctx, HandoverKind::list, "");
    if (!plan) return {};
    plan.value().command = std::move(command);
    plan.value().argv = render_bwrap_argv(plan.value());
    RunningQuery q;
    auto pid = launch_query_jail(ctx, plan.value(), q.out, nullptr);
    if (!pid) return {};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTenantQueryDeadlineMs);
    while (q.out.valid()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd p{q.out.get(), POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
        read_query_output(q, q.out.get());
    }
    if (q.out.valid()) ::kill(pid.value(), SIGKILL);
    int st = 0;
    while (::waitpid(pid.value(), &st, 0) < 0 && errno == EINTR) {}
    return q.out.valid() ? std::string() : q.out_text;
}

}  // namespace

Result<pid_t> notify_oom(const OwnerContext& ctx, const std::string& line) {
    const pid_t child = ::fork();
    if (child < 0) return fail(Exit::internal, std::string("fork failed: ") + std::strerror(errno));
    if (child > 0) return child;
    [&]() noexcept {
        try {
            const Account& t = ctx.start.tenant.account;
            for (const auto& tty : notice_clients(run_tmux_command(ctx, tmux_clients_command(t))))
                (void)run_tmux_command(ctx, tmux_notice_command(t, tty, line));
        } catch (...) {
        }
    }();
    ::_exit(0);
}

Result<RunningQuery> start_query(const OwnerContext& ctx, HandoverKind kind, const std::string& session) {
    auto plan = query_plan(ctx, kind, session);
    if (!plan) return plan.error();
    RunningQuery q;
    q.kind = kind;
    auto pid = launch_query_jail(ctx, plan.value(), q.out, &q.err);
    if (!pid) return pid.error();
    q.watcher = pid.value();
    q.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTenantQueryDeadlineMs);
    log::audit("allow", audit_reason(std::string("query jail (") + kind_name(kind) + ") started by supervisor " +
                                         std::to_string(::getpid()) + ", watcher " + std::to_string(q.watcher),
                                     plan.value()));
    return q;
}

Result<RunningQuery> ask_waiting_jail(const OwnerContext& ctx, HandoverKind kind, const std::string& session,
                                      int chan, pid_t watcher) {
    auto plan = query_plan(ctx, kind, session);
    if (!plan) return plan.error();
    const std::string words = query_words(plan.value());
    if (words.empty()) return fail(Exit::internal, "the query's command does not fit the waiting jail");
    RunningQuery q;
    q.kind = kind;
    UniqueFd out_w, err_w;
    if (!query_pipe(q.out, out_w) || !query_pipe(q.err, err_w))
        return fail(Exit::internal, "cannot make a query's pipes");
    q.answer.reset(::fcntl(chan, F_DUPFD_CLOEXEC, 3));
    if (!q.answer.valid()) return fail(Exit::internal, "cannot keep the waiting jail's channel");
    q.asked_of = watcher;
    const int pass[2] = {out_w.get(), err_w.get()};
    if (!send_with_fds(chan, words, pass, MSG_DONTWAIT)) return fail(Exit::internal, "cannot ask the waiting jail");
    q.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTenantQueryDeadlineMs);
    log::audit("allow", audit_reason(std::string("query (") + kind_name(kind) + ") asked of the waiting attach jail " +
                                         "by supervisor " + std::to_string(::getpid()) + ", watcher " +
                                         std::to_string(watcher),
                                     plan.value()));
    return q;
}

void read_query_status(RunningQuery& q) {
    Received said = receive_with_fds(q.answer.get(), kMaxStubAnswer, MSG_DONTWAIT);
    if (said.n < 0 && (said.error == EAGAIN || said.error == EWOULDBLOCK)) return;
    q.answer.reset();
    q.reaped = true;
    q.status = -1;
    // "exit N", N 0 to 255, as a supervisor's reply says it; anything else
    // (the jail ended, or its stub said something else) is no answer.
    if (said.n <= 0 || said.truncated || !said.fds.empty()) return;
    const auto r = parse_reply(said.data);
    if (r && r.value().kind == ReplyKind::exit) q.status = r.value().code << 8;
}

void read_query_output(RunningQuery& q, int fd) {
    const bool is_err = q.err.valid() && fd == q.err.get();
    UniqueFd& from = is_err ? q.err : q.out;
    std::string& into = is_err ? q.err_text : q.out_text;
    char buf[4096];
    for (int i = 0; i < 64; ++i) {
        const ssize_t n = ::read(from.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (n <= 0) {
            from.reset();
            return;
        }
        if (into.size() < kMaxQueryOutput)
            into.append(buf, std::min(static_cast<std::size_t>(n), kMaxQueryOutput - into.size()));
    }
}

bool query_ready(const RunningQuery& q) { return q.reaped && !q.out.valid() && !q.err.valid(); }

QueryAnswer query_answer(const RunningQuery& q) {
    if (!q.reaped) return QueryAnswer{};
    return answer_of(q.kind, exit_status_of(q.status), q.out_text, q.err_text);
}

}  // namespace clihost
