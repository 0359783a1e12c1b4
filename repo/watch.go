package repo

// A Watch tells a reader whether anything a read of the repository depends
// on may have changed since it last asked: the refs (every loose ref file
// under refs/, packed-refs, HEAD) and the files of the folders it was given
// (graft.yaml's). Objects are not watched: Git never changes one in place.
//
// Generation polls it. The value moves on any change, and on anything the
// watch cannot vouch for (an overflowed event queue, a folder that could
// not be watched); while it stays the same, nothing watched changed. A
// change made by another process is seen by the first Generation that
// starts after the call that made it returned: the kernel queues the event
// before the rename or write returns, and Generation reads the queue
// itself rather than through a goroutine that may not have run yet.
//
// A derived answer may be kept with the generation it was computed under
// (taken before it started) and reused while Generation returns the same
// value. Where there is no such watch (not Linux, or the kernel refuses
// one), WatchRefs returns an error and nothing is reused.
