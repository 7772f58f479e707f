// Command crosscheck type-checks packages, with every package they import,
// for other operating systems than the one it runs on: the build check of
// scripts/test.sh for macOS and FreeBSD.
//
//	go run ./internal/crosscheck -goos darwin,freebsd [-C dir] PACKAGES...
//
// It type-checks from source (go/packages, as gopls does), so that it
// catches what a cross build catches in pure Go (an API missing on that
// system, a file that a build tag leaves out) without compiling the
// dependencies for each system: on an empty build cache that compile
// took minutes a system (cmd/baton imports the etcd server), the type
// check seconds. It builds nothing, so what only the compiler or the
// linker checks (assembly, cgo, //go:linkname) is not checked; baton has
// none of those, and the cross builds are CGO_ENABLED=0.
//
// It prints each error and exits 1 if there was any.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/tools/go/packages"
)

func main() {
	goos := flag.String("goos", "darwin,freebsd", "comma-separated systems to check for")
	dir := flag.String("C", "", "directory to load the packages from (default: the current one)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: crosscheck [-goos darwin,freebsd] [-C dir] PACKAGES...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	failed := false
	for _, sys := range strings.Split(*goos, ",") {
		errs, err := check(*dir, sys, flag.Args())
		if err != nil {
			fmt.Fprintf(os.Stderr, "crosscheck: GOOS=%s: %v\n", sys, err)
			os.Exit(1)
		}
		for _, e := range errs {
			fmt.Fprintf(os.Stderr, "GOOS=%s: %s\n", sys, e)
		}
		failed = failed || len(errs) > 0
	}
	if failed {
		os.Exit(1)
	}
}

// check type-checks patterns and their imports for GOOS sys and returns
// their errors.
func check(dir, sys string, patterns []string) ([]string, error) {
	start := time.Now()
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps |
			packages.NeedSyntax | packages.NeedTypes,
		Dir: dir,
		Env: append(os.Environ(), "GOOS="+sys, "CGO_ENABLED=0"),
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	var errs []string
	n := 0
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		n++
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
	})
	fmt.Printf("GOOS=%s: %d packages type-checked in %s, %d errors\n",
		sys, n, time.Since(start).Round(100*time.Millisecond), len(errs))
	return errs, nil
}
