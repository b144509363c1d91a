// AtomicFile / write_file_atomic / read_file: round trips, no temp files left behind, the
// old file intact after every kind of failure (full disk, rename refused), and the error
// naming the path and strerror.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "io/atomic_file.h"
#include "io_test_util.h"
#include "roberta/error.h"

namespace fs = std::filesystem;
using rc::Errc;
using rc::io::AtomicFile;
using rc::io::read_file;
using rc::io::write_file_atomic;
using rc::test::expect_error;
using rc::test::TempDir;

TEST(AtomicFile, RoundTripAndReplace) {
  TempDir dir;
  const fs::path p = dir.path() / "a.bin";
  std::string bytes(100000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 31 + 7);
  write_file_atomic(p, bytes);
  EXPECT_EQ(read_file(p), bytes);
  write_file_atomic(p, "second");
  EXPECT_EQ(read_file(p), "second");
  write_file_atomic(p, "");
  EXPECT_EQ(read_file(p), "");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"a.bin"});
}

TEST(AtomicFile, StreamingWritesInPieces) {
  TempDir dir;
  const fs::path p = dir.path() / "s.txt";
  {
    AtomicFile f(p);
    f.write("abc", 3);
    f.write("", 0);
    f.write("defg", 4);
    EXPECT_FALSE(fs::exists(p)) << "target must not appear before commit";
    f.commit();
  }
  EXPECT_EQ(read_file(p), "abcdefg");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"s.txt"});
}

TEST(AtomicFile, AbandonedWriteLeavesOldFileAndNoTemp) {
  TempDir dir;
  const fs::path p = dir.path() / "keep.txt";
  write_file_atomic(p, "old");
  {
    AtomicFile f(p);
    f.write("new but never committed", 23);
  }  // destructor: no commit
  EXPECT_EQ(read_file(p), "old");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"keep.txt"});
}

TEST(AtomicFile, RenameOntoFolderFailsAndLeavesNoTemp) {
  TempDir dir;
  const fs::path p = dir.path() / "target";
  fs::create_directory(p);
  write_file_atomic(p / "inside.txt", "old");
  expect_error(Errc::io, {"target"}, [&] { write_file_atomic(p, "new"); });
  EXPECT_EQ(read_file(p / "inside.txt"), "old");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"target"});
}

TEST(AtomicFile, MissingFolderIsIoError) {
  TempDir dir;
  expect_error(Errc::io, {"no_such_dir", "No such file"},
               [&] { write_file_atomic(dir.path() / "no_such_dir" / "x", "x"); });
}

// /dev/full fails every write with ENOSPC: the write loop must report it, with the hint.
TEST(AtomicFile, WriteAllReportsEnospc) {
  const int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (fd < 0) GTEST_SKIP() << "/dev/full not available";
  try {
    rc::io::detail::write_all(fd, "abc", 3, "/dev/full");
    ADD_FAILURE() << "write to /dev/full succeeded";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), Errc::io);
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::strerror(ENOSPC)), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("disk space"), std::string::npos) << e.hint();
  }
  ::close(fd);
}

// A file-size limit makes the kernel cut the write short and then fail it (EFBIG), the
// same path a full disk takes: partial write, error, temp removed, old file intact.
TEST(AtomicFile, FullDiskViaFileSizeLimitKeepsOldFile) {
  TempDir dir;
  const fs::path p = dir.path() / "model.bin";
  write_file_atomic(p, "old contents");
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);  // else the kernel kills us instead of EFBIG
  struct rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  try {
    write_file_atomic(p, std::string(100000, 'x'));
  } catch (const rc::Error& e) {
    threw = true;
    EXPECT_EQ(e.errc(), Errc::io);
    EXPECT_NE(std::string(e.what()).find("model.bin"), std::string::npos) << e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_TRUE(threw);
  EXPECT_EQ(read_file(p), "old contents");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.bin"});
}

// The real thing where we may mount (root, tmpfs allowed): a 64 KiB file system.
TEST(AtomicFile, FullTmpfsKeepsOldFile) {
  TempDir dir;
  const fs::path mnt = dir.path() / "mnt";
  fs::create_directory(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << ")";
  struct Unmount {
    fs::path m;
    ~Unmount() { ::umount(m.c_str()); }
  } unmount{mnt};
  const fs::path p = mnt / "model.bin";
  write_file_atomic(p, "old contents");
  expect_error(Errc::io, {"model.bin", std::strerror(ENOSPC)},
               [&] { write_file_atomic(p, std::string(1 << 20, 'x')); });
  EXPECT_EQ(read_file(p), "old contents");
  EXPECT_EQ(TempDir::list(mnt), std::vector<std::string>{"model.bin"});
}

TEST(ReadFile, MissingIsNotFound) {
  TempDir dir;
  expect_error(Errc::not_found, {"nope.txt"}, [&] { read_file(dir.path() / "nope.txt"); });
}

// A folder is refused as bad input, like a FIFO or a device (core/regular_file.h).
TEST(ReadFile, FolderIsRefused) {
  TempDir dir;
  expect_error(Errc::format, {"is a folder"}, [&] { read_file(dir.path()); });
}
