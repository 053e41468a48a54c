// A request head read as bytes, before httplib parses it: its header lines and how much body
// the waiting room (connections) should wait for.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace hd::serve {

// `s` in ASCII lower case (header names and host names compare case-blind).
std::string lower(std::string s);

// `s` without HTTP's optional white space (spaces and tabs) around it.
std::string trim_ows(const std::string& s);

// One header line of a request head: its name in lower case, its value without the white space
// around it, the offset of the line and its length with its CRLF.
struct HeaderLine {
  std::string name, value;
  size_t at, length;
};

// The header lines of a request head (its request line skipped), up to the blank line.
std::vector<HeaderLine> header_lines(const std::string& head);

// How many body bytes to wait for: the first Content-Length when it is a number within
// `max`; 0 otherwise (the request guard refuses those without reading a body).
size_t announced_body(const std::vector<HeaderLine>& lines, size_t max);

}  // namespace hd::serve
