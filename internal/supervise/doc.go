// Package supervise runs a command (CMD) for as long as a hold lasts and
// no longer: in a process group of its own, with caught signals passed on
// to the group, and, for a hold that can be handed on, under a watchdog
// process that kills the group by the hold's loss deadline even if the
// supervising process is killed, stopped or starved.
//
// The watchdog is a second process (Watchdog is its body; the supervising
// program runs it as a hidden command of its own executable) that leads
// the group CMD joins. The supervisor tells it, over a pipe, the loss
// deadline (the last confirmed contact with the store plus the TTL minus
// the backend's margin) each time that deadline moves. The watchdog
// SIGTERMs the group (itself excepted: it ignores SIGTERM) Stop.Grace
// before the deadline, and SIGKILLs the whole group, itself included, when
// the deadline passes or when the pipe closes (the supervisor died). So
// CMD is told to stop at least the grace before it is killed, and it and
// everything it started in its group stop no later than the moment the
// store could hand the lock on: the watchdog keeps both times itself. When
// the supervisor learns the hold ended, it asks the watchdog to stop the
// group: SIGTERM unless sent already, SIGKILL Stop.KillAfter later or at
// the deadline, whichever is first. Deadlines travel as CLOCK_MONOTONIC
// readings, a clock both processes share, so a message read late still
// means the same instant.
//
// Supervisor → watchdog, one line each: "d <ns>" the loss deadline (0:
// lost already); "t <ns>" stop the group: SIGTERM now, SIGKILL at <ns> at
// the latest. Watchdog → supervisor: "ready" (it ignores the signals meant
// for CMD); "term" (it sent the grace's SIGTERM); "fired" (the deadline
// passed: it kills the group); "killed" (it kills the group at the time a
// "t" set).
package supervise
