// ceph-perf test support (ci/patch-tests): the patched tree's options table,
// for a unit test linked against Debian's libceph-common when the patch under
// test adds options the stock table lacks.
//
// The library reads its table through the data symbol ceph_options, which
// the test executable takes over with this storage. When the library is
// loaded it constructs its own (stock) table there and registers the one
// destructor that runs at exit. This file's initializer runs after that and
// rebuilds the table from the patched tree's build_options(), leaking the
// stock one on purpose: a second std::vector object here would be destroyed
// twice at exit.
#include <new>
#include <vector>

#include "common/options.h"
#include "common/options/build_options.h"

alignas(std::vector<Option>) unsigned char patched_options_table[sizeof(std::vector<Option>)]
    __asm__("ceph_options");

namespace {
struct ReplaceOptionsTable {
  ReplaceOptionsTable() {
    new (patched_options_table) std::vector<Option>(build_options());
  }
} replace_options_table;
}  // namespace
