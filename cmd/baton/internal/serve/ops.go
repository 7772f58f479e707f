package serve

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/cmd/baton/internal/exit"

	"github.com/batonhq/baton/etcd/embedded"
)

// defaultQuotaBytes is serve's --quota-backend-bytes: etcd's own default.
const defaultQuotaBytes = 2 << 30

// defaultSnapshotCount is serve's --snapshot-count: etcd's own default.
const defaultSnapshotCount = 10000

// Ops are serve's operations flags.
type Ops struct {
	compactEvery time.Duration
	quota        byteSize
	snapshots    uint64
}

// AddFlags adds the operations flags to fs.
func (o *Ops) AddFlags(fs *flag.FlagSet) {
	o.quota = defaultQuotaBytes
	fs.DurationVar(&o.compactEvery, "compaction-interval", embedded.DefaultCompactEvery,
		"every this long, compact history older than one interval, defragment when more than half the backend is free, and disarm a space alarm that freed (0: never)")
	fs.Var(&o.quota, "quota-backend-bytes", "the backend's space `SIZE` (bytes, or with KiB, MiB, GiB): past it the server refuses writes until space is freed")
	fs.Uint64Var(&o.snapshots, "snapshot-count", defaultSnapshotCount, "applied entries between two snapshots (older WAL files go after one)")
}

// Apply checks the flags and sets them in cfg. Its errors are usage
// errors.
func (o *Ops) Apply(cfg *embedded.Config) error {
	if o.compactEvery < 0 {
		return exit.Usagef("serve: --compaction-interval must not be negative")
	}
	if o.snapshots == 0 {
		return exit.Usagef("serve: --snapshot-count must be positive")
	}
	cfg.CompactEvery, cfg.QuotaBackendBytes, cfg.SnapshotCount = o.compactEvery, int64(o.quota), o.snapshots
	return nil
}

// byteSize is a flag holding a size in bytes, given as a number with an
// optional KiB, MiB or GiB suffix.
type byteSize int64

func (b *byteSize) String() string {
	switch v := int64(*b); {
	case v >= 1<<30 && v%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", v>>30)
	case v >= 1<<20 && v%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", v>>20)
	case v >= 1<<10 && v%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", v>>10)
	default:
		return strconv.FormatInt(v, 10)
	}
}

func (b *byteSize) Set(s string) error {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = n, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return fmt.Errorf("want a positive number of bytes, optionally with KiB, MiB or GiB")
	}
	*b = byteSize(n * mult)
	return nil
}
