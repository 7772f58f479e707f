// Package demo is `baton demo`'s run: worker processes (baton's hidden
// `worker` command) contend for a lock, elect a leader and lose it to a
// crash, pass a double barrier and drain a queue, each logging what it
// does; the summary checks what each recipe promises.
package demo
