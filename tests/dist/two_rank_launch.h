// The launch of rank `rank` in a two-rank world on loopback, store and gloo on `port`: what
// the store and collective tests start each rank with.
#pragma once

#include "dist/launch_env.h"

namespace rc::test {

inline dist::LaunchInfo two_rank_launch(int rank, int port) {
  dist::LaunchInfo li;
  li.rank = rank;
  li.world_size = 2;
  li.master_addr = "127.0.0.1";
  li.master_port = port;
  li.store_port = port;
  return li;
}

}  // namespace rc::test
