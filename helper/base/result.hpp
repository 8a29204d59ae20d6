// result.hpp: the value type every fallible step returns. Errors carry the exit
// code of the command-line contract (clihost-jail(8), EXIT STATUS)
// and a one-line message; only main turns them into an exit.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace clihost {

// Exit codes are part of the stable command-line contract (clihost-jail(8)).
enum class Exit : int {
    ok = 0,
    refused = 1,   // policy said no: caller, tenant, input
    usage = 2,     // malformed command line
    host = 3,      // this host cannot run a safe jail
    internal = 4,  // a step that must not fail did
};

struct Error {
    Exit code;
    std::string message;
};

template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}            // NOLINT(google-explicit-constructor)
    Result(Error error) : v_(std::move(error)) {}        // NOLINT(google-explicit-constructor)
    bool ok() const { return std::holds_alternative<T>(v_); }
    explicit operator bool() const { return ok(); }
    const T& value() const& { return std::get<T>(v_); }
    T& value() & { return std::get<T>(v_); }
    T&& value() && { return std::get<T>(std::move(v_)); }
    const Error& error() const { return std::get<Error>(v_); }

private:
    std::variant<T, Error> v_;
};

struct Unit {};
using Status = Result<Unit>;

inline Status ok_status() { return Unit{}; }
inline Error fail(Exit code, std::string message) { return Error{code, std::move(message)}; }

}  // namespace clihost
