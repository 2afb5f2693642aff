#include "system/process.h"

#include "system/atomic_file.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pln::exp {

pid_t spawn(const std::vector<std::string>& argv, const std::filesystem::path& log,
            const std::vector<std::pair<std::string, std::string>>& environment, int inherited) {
  if (argv.empty()) throw std::invalid_argument("spawn: empty command");
  std::filesystem::create_directories(log.has_parent_path() ? log.parent_path() : ".");
  // Never through a symbolic link planted in its place: truncating one
  // would empty whatever file it names.
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0 && errno == ELOOP) {
    throw std::runtime_error("log " + log.string() + " is a symbolic link; refused (pln follows none inside a run or "
                             "grid directory)");
  }
  if (fd < 0) {
    throw std::runtime_error("cannot open log " + log.string() + ": " + std::strerror(errno));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The child's environment, built before fork (setenv is not safe after it).
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const auto name = entry.substr(0, entry.find('='));
    const bool replaced = std::any_of(environment.begin(), environment.end(),
                                      [&](const auto& kv) { return kv.first == name; });
    if (!replaced) env_text.push_back(entry);
  }
  for (const auto& [name, value] : environment) env_text.push_back(name + "=" + value);
  std::vector<char*> env;
  for (auto& entry : env_text) env.push_back(entry.data());
  env.push_back(nullptr);
  // A pipe closed on exec tells the parent whether exec succeeded.
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
    ::close(fd);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fd);
    ::close(status_pipe[0]);
    ::close(status_pipe[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    if (inherited >= 0) ::fcntl(inherited, F_SETFD, 0);
    ::execvpe(args[0], args.data(), env.data());
    const int err = errno;
    (void)!::write(status_pipe[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(fd);
  ::close(status_pipe[1]);
  int err = 0;
  ssize_t n;
  do {
    n = ::read(status_pipe[0], &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  ::close(status_pipe[0]);
  if (n == sizeof err) {
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error("cannot run " + argv[0] + ": " + std::strerror(err));
  }
  return pid;
}

std::pair<pid_t, int> wait_child(pid_t pid) {
  int status = 0;
  pid_t done;
  do {
    done = ::waitpid(pid, &status, 0);
  } while (done < 0 && errno == EINTR);
  if (done < 0) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  if (WIFEXITED(status)) return {done, WEXITSTATUS(status)};
  if (WIFSIGNALED(status)) return {done, 128 + WTERMSIG(status)};
  return {done, 1};
}

int run_process(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  return wait_child(spawn(argv, log)).second;
}

std::filesystem::path self_executable() { return std::filesystem::read_symlink("/proc/self/exe"); }

std::string shell_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& word : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !word.empty() && word.find_first_not_of(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./=:,+@%") == std::string::npos;
    if (plain) {
      out += word;
      continue;
    }
    out += '\'';
    for (char c : word) {
      if (c == '\'') out += "'\\''";
      else out += c;
    }
    out += '\'';
  }
  return out;
}

std::string tail_of(const std::filesystem::path& path, int max_lines) {
  // A log may be of any length, or be planted (a link, a FIFO): only a
  // regular file's last kTailBytes are read, never through a link.
  std::string text;
  try {
    text = read_regular_file_tail(path, kTailBytes);
  } catch (const std::exception&) {
    return "";
  }
  std::deque<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > max_lines) lines.pop_front();
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace pln::exp
