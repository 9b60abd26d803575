// `dnnblocks inspect` for GGUF files (core/gguf.h): chosen by the file's magic.
#pragma once
#include <string>

namespace dnnb::cli {

// True when the file at `path` is to be read as GGUF: it starts with the GGUF magic, or its
// name ends in ".gguf" and it does not start as a safetensors file does (a length, then '{' or
// JSON whitespace),
// so that a damaged .gguf file is refused by the GGUF rules ("magic") and a safetensors file
// is read as one whatever its name. False when it cannot be read (the safetensors path then
// reports why).
bool read_as_gguf(const std::string& path);
// Validates the file and prints its header, metadata and tensors (text or JSON). Exit codes as
// for safetensors: 0 valid, 2 a rule broken (the message names the file, byte, field and
// rule), 3 another failure.
int inspect_gguf_file(const std::string& path, bool as_json);

}  // namespace dnnb::cli
