// handed.hpp: the words a jail's stub is handed with the caller's
// descriptors (helper/stub): a command's argv and its environment, as one
// message. Shared by the helper, which lays them out, and the stub, which
// reads them back: one layout, one reader.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace clihost {

// Each argv word as '+' and the word (so that an empty word is one), then
// an empty word, then each NAME=value; every word NUL-terminated.
// Empty when the argv is empty or its first word is, a word holds a NUL,
// an environment entry is not NAME=value, or the whole would be over
// `max` bytes.
std::string encode_handed(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          std::size_t max);

struct HandedWords {
    std::vector<std::string> argv, env;
    const char* wrong{nullptr};  // why the message is not a command (then argv and env mean nothing)
};

// encode_handed's inverse: what it laid out, it reads back whole.
HandedWords decode_handed(std::string_view msg);

}  // namespace clihost
