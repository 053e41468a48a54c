// A word as a POSIX shell reads it back unchanged: kept as is when nothing in it is special,
// else in single quotes. What provenance's command line and Slurm's batch scripts are made of.
#pragma once
#include <string>

namespace hd {

std::string shell_quote(const std::string& s);

}  // namespace hd
