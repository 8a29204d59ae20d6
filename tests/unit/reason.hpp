// reason.hpp: refusal tests assert the reason, not only the exit code, so a
// row cannot pass because some other check happened to refuse its input.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "base/result.hpp"

namespace clihost::testing {

// EXPECT_TRUE(refused_with(r, Exit::host, "config line 2: NUL byte")): the
// result is an error with this exit code whose message contains `reason`.
template <class T>
::testing::AssertionResult refused_with(const Result<T>& r, Exit code, std::string_view reason) {
    if (r.ok()) return ::testing::AssertionFailure() << "accepted; expected a refusal containing \"" << reason << '"';
    const Error& e = r.error();
    if (e.code != code)
        return ::testing::AssertionFailure() << "exit " << static_cast<int>(e.code) << " instead of "
                                             << static_cast<int>(code) << ": " << e.message;
    if (e.message.find(reason) == std::string::npos)
        return ::testing::AssertionFailure() << "message \"" << e.message << "\" does not contain \"" << reason << '"';
    return ::testing::AssertionSuccess();
}

// The same, with the whole message equal to `message` (tables that list
// the exact text of every refusal).
template <class T>
::testing::AssertionResult refused_exactly(const Result<T>& r, Exit code, std::string_view message) {
    auto with = refused_with(r, code, message);
    if (!with) return with;
    if (r.error().message != message)
        return ::testing::AssertionFailure() << "message \"" << r.error().message << "\" is not \"" << message << '"';
    return ::testing::AssertionSuccess();
}

}  // namespace clihost::testing
