package batontest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
)

// suite lists every conformance test. Recipes add theirs here.
var suite = []testCase{
	{"Mutex/SeedsScenario", testMutexSeeds},
	{"Mutex/MutualExclusion", testMutexExclusion},
	{"Mutex/HerdFree", testMutexHerd},
	{"Mutex/TryLock", testMutexTryLock},
	{"Mutex/Reentrant", testMutexReentrant},
	{"Mutex/SharedByGoroutines", testMutexShared},
	{"Mutex/SharedWaitsForUnlock", testMutexSharedWaits},
	{"Mutex/CancelLeavesNothing", testMutexCancel},
	{"Mutex/CancelAtEveryStep", testMutexCancelAtEveryStep},
	{"Mutex/CreateReplyLost", testMutexCreateReplyLost},
	{"Mutex/CreateReplyLostMany", testMutexCreateReplyLostMany},
	{"Mutex/LostBeforeOthersAcquire", testMutexLostFirst},
	{"Mutex/ExpiryWhileHolding", testMutexExpiry},
	{"Mutex/WaiterSessionLost", testMutexWaiterLost},
	{"Mutex/InvalidName", testMutexInvalidName},
	{"Mutex/NameForms", testMutexNameForms},
	{"Mutex/UnlockCancelledCtx", testMutexUnlockCancelled},
	{"Mutex/NodeDeletedRevokes", testMutexRevoked},
	{"Mutex/JeopardyThenLossThenTakeover", testMutexJeopardy},
	{"Lease/DeadlineOfEveryRecipe", testLeaseDeadlines},
	{"RWMutex/ManyReaders", testRWMutexReaders},
	{"RWMutex/WriterExcludes", testRWMutexExclusion},
	{"RWMutex/WriterBeforeLaterReaders", testRWMutexWriterFirst},
	{"RWMutex/HerdFree", testRWMutexHerdFree},
	{"RWMutex/CancelLeavesNothing", testRWMutexCancel},
	{"RWMutex/CancelAtEveryStep", testRWMutexCancelAtEveryStep},
	{"RWMutex/Downgrade", testRWMutexDowngrade},
	{"RWMutex/Expiry", testRWMutexExpiry},
	{"RWMutex/UnlockCancelledCtx", testRWMutexUnlockCancelled},
	{"RWMutex/RUnlockCancelledCtx", testRWMutexRUnlockCancelled},
	{"RWMutex/WriterNodeDeletedRevokes", testRWMutexRevoked},
	{"RWMutex/ReaderNodeDeletedRevokes", testRWMutexReaderRevoked},
	{"RWMutex/MutexIsAWriter", testRWMutexWithMutex},
	{"Semaphore/TwentyClientsThreePermits", testSemaphoreLimit},
	{"Semaphore/TryAcquire", testSemaphoreTryAcquire},
	{"Semaphore/CancelLeavesNothing", testSemaphoreCancel},
	{"Semaphore/CancelAtEveryStep", testSemaphoreCancelAtEveryStep},
	{"Semaphore/DeadHolderFreesLease", testSemaphoreDeadHolder},
	{"Semaphore/HerdFree", testSemaphoreHerdFree},
	{"Semaphore/NoPermits", testSemaphoreNoPermits},
	{"Semaphore/PermitsMismatch", testSemaphorePermitsMismatch},
	{"Semaphore/ReleaseCancelledCtx", testSemaphoreReleaseCancelled},
	{"Semaphore/NodeDeletedRevokes", testSemaphoreRevoked},
	{"Election/CampaignLeaderProclaimResign", testElectionBasic},
	{"Election/Observe", testElectionObserve},
	{"Election/LockKindCandidates", testElectionForeignCandidate},
	{"Election/CancelLeavesNothing", testElectionCancel},
	{"Election/RunLeaderExpired", testElectionRunExpiry},
	{"Election/RunLeaderCutOff", testElectionRunPartition},
	{"Election/RunNodeDeleted", testElectionNodeDeleted},
	{"Election/ResignCancelledCtx", testElectionResignCancelled},
	{"Election/NodeDeletedRevokes", testElectionRevoked},
	{"Barrier/TenWaitOneDies", testBarrierWait},
	{"Barrier/CancelLeavesBarrier", testBarrierCancel},
	{"DoubleBarrier/TenEnterLeaveOneDies", testDoubleBarrier},
	{"DoubleBarrier/CancelAndDeathBeforeOpen", testDoubleBarrierCancel},
	{"DoubleBarrier/NoParticipants", testDoubleBarrierNoParticipants},
	{"DoubleBarrier/ParticipantsMismatch", testDoubleBarrierParticipantsMismatch},
	{"Queue/FIFO", testQueueFIFO},
	{"Queue/EightByEightOneKilled", testQueueLoad},
	{"Queue/CancelAfterSend", testQueueCancelAfterSend},
	{"Queue/TakeDeadSession", testQueueTakeDeadSession},
	{"Queue/HonoursClaims", testQueueHonoursClaims},
	{"Queue/MixedConsumers", testQueueMixedConsumers},
	{"ReliableQueue/Claims", testReliableQueueClaims},
	{"ReliableQueue/EightByEightOneKilled", testReliableQueueLoad},
	{"ReliableQueue/CancelAfterSend", testReliableQueueCancelAfterSend},
	{"ReliableQueue/TakeDeadSession", testReliableQueueTakeDeadSession},
	{"MultiLock/MutualExclusion", testMultiLockExclusion},
	{"MultiLock/OppositeOrdersNoDeadlock", testMultiLockOppositeOrders},
	{"MultiLock/PartialFailureLeavesNothing", testMultiLockPartialFailure},
	{"MultiLock/PartLostEndsLease", testMultiLockPartLost},
	{"MultiLock/InvalidParts", testMultiLockInvalid},
	{"MultiLock/TryLockAllOrNothing", testMultiLockTryLock},
	{"MultiLock/RevokeRequested", testMultiLockRevokeRequested},
	{"Revocation/HolderAsked", testRevocationAsked},
	{"Revocation/NotRevocableUntouched", testRevocationNotRevocable},
	{"Counter/SharedCount", testSharedCount},
	{"Counter/AtomicLongAdds", testAtomicLongAdds},
	{"Counter/AtomicLongContention", testAtomicLongContention},
	{"LeaderSelector/RequeueTakesTurns", testSelectorRequeue},
	{"LockDelay/ExpiredHolderDelays", testLockDelayExpired},
	{"LockDelay/ReleasedOrOffNoDelay", testLockDelayReleasedAndOff},
	{"LockDelay/CancelDuringDelay", testLockDelayCancel},
	{"LockDelay/MarkerFailsNodeRemoved", testLockDelayMarkerFails},
	{"LeaderSelector/LossRequeues", testSelectorLossRequeues},
	{"LeaderSelector/BesideElectionRefused", testSelectorBesideElection},
	{"LeaderSelector/ObserveNoLeaderAndExpiry", testSelectorObserveAndExpiry},
	{"Group/ViewFollowsMembers", testGroupView},
	{"Group/MemberRejoinsAfterSessionLoss", testGroupMemberSessionLoss},
	{"PersistentNode/Recreated", testPersistentNodeRecreated},
	{"PriorityQueue/Order", testPriorityOrder},
	{"ItemQueues/ExactlyOnce", testItemQueueExactlyOnce},
	{"PriorityQueue/CancelAfterSend", testPriorityQueueCancelAfterSend},
	{"DelayQueue/NeverEarly", testDelayNeverEarly},
	{"PermitSemaphore/Expires", testPermitExpires},
	{"PermitSemaphore/ExtendFromAnother", testPermitExtend},
	{"PermitSemaphore/ReleaseByID", testPermitReleaseByID},
}

// Run runs the whole conformance suite against one backend.
func Run(t *testing.T, h Harness) { runCases(t, h, suite) }

// timeout bounds every conformance test. It is a liveness bound, not a
// speed claim: generous enough for a starved machine running -race.
const timeout = 120 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// LoadTTL is the session TTL of tests that do not measure expiry: long
// enough that a starved test machine (the race detector, parallel test
// binaries) never loses a session by accident. Tests about expiry use
// h.Expire, or short sessions where they need the TTL to run out.
const LoadTTL = 10 * time.Second

// sessions opens n sessions with LoadTTL.
func sessions(t *testing.T, h Harness, n int) []*baton.Session {
	return sessionsTTL(t, h, n, LoadTTL)
}

// shortSessions opens n sessions with the harness's short test TTL, for
// tests that wait for a TTL to run out.
func shortSessions(t *testing.T, h Harness, n int) []*baton.Session {
	return sessionsTTL(t, h, n, 0)
}

func sessionsTTL(t *testing.T, h Harness, n int, ttl time.Duration) []*baton.Session {
	ss := make([]*baton.Session, n)
	for i := range ss {
		ss[i] = h.Open(t, ttl)
	}
	return ss
}

// children lists dir through a fresh session.
func children(t *testing.T, h Harness, dir string) []backend.Node {
	t.Helper()
	s := observer(t, h)
	kids, err := s.Conn().Children(testCtx(t), dir)
	if err != nil {
		t.Fatalf("children %s: %v", dir, err)
	}
	return kids
}

// observers holds one reading session per test, so that polling a
// listing does not open a session per poll.
var observers sync.Map // *testing.T → *baton.Session

// observer returns test t's reading session, opening it (again, if the
// last one was lost) when needed.
func observer(t *testing.T, h Harness) *baton.Session {
	if v, ok := observers.Load(t); ok && v.(*baton.Session).Err() == nil {
		return v.(*baton.Session)
	}
	s := h.Open(t, LoadTTL)
	if _, loaded := observers.Swap(t, s); !loaded {
		t.Cleanup(func() { observers.Delete(t) })
	}
	return s
}

// settles reports whether cond comes to hold within 10 s. A cancelled
// call returns at once; a request it abandoned in flight (a create whose
// reply had not come) is undone in the background, so what it made may
// outlive its return by a round trip.
func settles(cond func() bool) bool { return await.Within(10*time.Second, cond) }

// firesExcept returns the watch notifications seen so far across ss except
// by releaser: the one a holder's watch on its own node gets when it
// deletes that node is not a waiter woken. With a store-wide count
// (h.WatchFires) it cannot be told apart, so one is allowed for it there.
func firesExcept(t *testing.T, h Harness, ss []*baton.Session, releaser *baton.Session) int64 {
	if h.WatchFires != nil {
		n := h.WatchFires(t)
		if releaser != nil {
			n--
		}
		return n
	}
	var n int64
	for _, s := range ss {
		if wc, ok := s.Conn().(backend.WatchCounter); ok && s != releaser {
			n += wc.WatchEvents()
		}
	}
	return n
}
