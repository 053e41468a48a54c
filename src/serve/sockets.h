// The socket calls the waiting room and its stream share: waiting with a deadline, a one-line
// refusal before httplib parses anything, closing after an answer, a peer's address as text.
#pragma once
#include <sys/socket.h>

#include <chrono>
#include <string>

namespace hd::serve::sockets {

using Clock = std::chrono::steady_clock;

// Milliseconds from now to `t`, within [0, 60000]: a poll or epoll_wait timeout.
int millis_until(Clock::time_point t);

// Waits for `events` on `fd` until `deadline`; false on timeout, error or hang-up.
bool wait_for(int fd, short events, Clock::time_point deadline);

// An answer for a connection turned away before httplib parses it: the same one-line JSON as
// every other refusal. Best effort: the socket's buffer is empty, so a short send fits.
void refuse(int fd, int status, const char* reason, const char* message);

// Closes after an answer. Closing a socket with unread bytes resets the connection, which can
// destroy the answer before the client reads it (a refused POST whose body was never read), so
// what is still arriving is read and dropped first, for a moment.
void close_after_answer(int fd);

// The address of `a` as text, and its port in `port` (IPv4 and IPv6; "" for another family).
std::string address_text(const sockaddr_storage& a, int& port);

}  // namespace hd::serve::sockets
