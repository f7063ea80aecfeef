import Foundation
import StrataSyncWire

// Invariant: after each round of pages, every object's bytes here are its state at the version of the page
// (of that round) whose reference range holds it, and an object absent here had no row then.
// - The first round reads every object. A later round reads, in each page, only the objects changed after the
//   version of the previous round's first page (S): an object it leaves out did not change between S and its
//   page's version, and its bytes came from a page of the previous round, read at a version between the two,
//   so they are its state at this page's version too. Rows are never deleted (a deletion leaves a tombstone).
// - So a round of one page is the state at that page's version: a consistent snapshot, from a server that keeps
//   no state between requests.
// - All within one history: each page names the newest version a page before it was read at, with its salt. A
//   server restored from a backup since then no longer has that pair, answers `diverged`, and the walk starts
//   over (a history replaces only a suffix of versions, so the newest pair stands for all before it).

/// A snapshot that a server gives in pages, each read at the version it was asked at, made consistent by rounds
/// of catch-up pages.
package enum SnapshotPages {
    /// `first`, the answer to `request` (which asked for pages), with its snapshot completed: the next pages, then
    /// rounds of the objects changed meanwhile, until a round fits one page. The answer of that last page is
    /// returned with every object, in the order they first came (the server's, then those created meanwhile).
    /// Each page names the newest version the pages before it were read at: a server restored from a backup
    /// since then answers `diverged`, and the walk starts over. A first answer without a snapshot, or that says
    /// `diverged`, is returned as it came.
    ///
    /// A walk ends when a round's changes fit one page: a partition that changes faster than its pages are read
    /// keeps it going.
    package static func complete(
        _ first: PullResponse, asking request: PullRequest, send: (PullRequest) async throws -> PullResponse
    ) async throws -> PullResponse {
        var first = first
        while true {
            guard first.diverged != true, first.snapshot?.next != nil else { return first }
            if let done = try await walk(first, asking: request, send: send) { return done }
            // The server no longer has what earlier pages were read from: start over.
            var again = request
            again.waitMilliseconds = 0
            first = try await send(again)
        }
    }

    /// The walk from `first` (a first page with more after it); nil when a later answer has no snapshot or says
    /// `diverged`.
    private static func walk(
        _ first: PullResponse, asking request: PullRequest, send: (PullRequest) async throws -> PullResponse
    ) async throws -> PullResponse? {
        guard var page = first.snapshot else { return nil }
        // The objects in the order they first came (the first round's is the server's), and where each is.
        var objects: [WireSnapshot.Object] = []
        var position: [Data: Int] = [:]
        var response = first
        var request = request
        request.waitMilliseconds = 0  // a snapshot is given at once
        var roundStart = page.version
        var pagesInRound = 1
        while true {
            for o in page.objects {
                if let i = position[o.reference] {
                    objects[i].state = o.state
                } else {
                    position[o.reference] = objects.count
                    objects.append(o)
                }
            }
            if request.snapshotSeen.map({ page.version > $0 }) ?? true {
                (request.snapshotSeen, request.snapshotSeenSalt) = (page.version, page.salt)
            }
            if let next = page.next {
                request.snapshotAfter = next
                pagesInRound += 1
            } else if pagesInRound == 1 {
                break
            } else {
                // A round of several pages: their versions differ. The next round reads what changed since the
                // first of them.
                request.snapshotAfter = nil
                request.snapshotSince = roundStart
                pagesInRound = 1
            }
            response = try await send(request)
            guard let got = response.snapshot, response.diverged != true else { return nil }
            if request.snapshotAfter == nil { roundStart = got.version }
            page = got
        }
        page.objects = objects
        page.next = nil
        response.snapshot = page
        return response
    }
}
