import Engine
import Foundation
import TestSupport


/// An HTTP/1.1 proxy between sync clients and a server that misbehaves as a network does: each request is, at
/// random (seeded), delayed, lost before the server sees it, lost after the server answered, or sent to the
/// server twice. Concurrent connections and delays reorder requests. Its target can move (a restarted server
/// listens on a new port). Blocking sockets, a thread per connection: a test's few clients need no more.
final class FaultyProxy: @unchecked Sendable {
    struct Faults {
        /// Per cent of requests lost before the server, lost after it answered, and sent twice.
        var dropRequest = 5
        var dropResponse = 5
        var duplicate = 5
        /// The most a request waits before it is forwarded, and its answer before it is returned.
        var maxDelayMilliseconds = 30
        /// Every pull lost, before the server or, for one sent before this was set, its answer (the client's
        /// downloads fail; its uploads go on).
        var losePulls = false

        /// `SYNC_TEST_FAULTS=dropRequest,dropResponse,duplicate,maxDelay` sets them (per cent, ms).
        static var fromEnvironment: Faults {
            var f = Faults()
            let n = (ProcessInfo.processInfo.environment["SYNC_TEST_FAULTS"] ?? "").split(separator: ",").compactMap { Int($0) }
            if n.count == 4 { (f.dropRequest, f.dropResponse, f.duplicate, f.maxDelayMilliseconds) = (n[0], n[1], n[2], n[3]) }
            return f
        }
    }

    private let listener: Int32
    let port: Int
    private let state: Locked<(target: Int, rng: SplitMix64, faults: Faults, stopped: Bool)>
    /// Requests lost, answers lost, requests sent twice (counted).
    let counts = Locked((droppedRequests: 0, droppedResponses: 0, duplicated: 0, forwarded: 0))

    init(target: Int, seed: UInt64, faults: Faults = Faults.fromEnvironment) throws {
        state = Locked((target, SplitMix64(seed: seed), faults, false))
        (listener, port) = try LoopbackSocket.listen()
        let listener = self.listener
        Thread { [weak self] in
            while let fd = LoopbackSocket.accept(listener) {
                guard let self, !self.state.withLock({ $0.stopped }) else {
                    LoopbackSocket.close(fd)
                    return
                }
                Thread { self.serve(fd) }.start()
            }
        }.start()
    }

    deinit { stop() }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Sends requests to a server on `port` from now on.
    func retarget(_ port: Int) { state.withLock { $0.target = port } }

    func setFaults(_ faults: Faults) { state.withLock { $0.faults = faults } }

    func stop() {
        let first = state.withLock { s -> Bool in
            defer { s.stopped = true }
            return !s.stopped
        }
        if first {
            LoopbackSocket.shutdown(listener)
            LoopbackSocket.close(listener)
        }
    }

    private enum Fate { case forward, dropRequest, dropResponse, duplicate }

    /// One client connection: requests in turn (keep-alive), each meeting its fate.
    private func serve(_ client: Int32) {
        defer { LoopbackSocket.close(client) }
        var buffer = [UInt8]()
        while let received = Self.readMessage(client, &buffer, answeringExpect: true) {
            let request = Self.withoutExpect(received)
            let (fate, delay, target) = state.withLock { s -> (Fate, Int, Int) in
                let roll = Int.random(in: 0..<100, using: &s.rng)
                let f = s.faults
                let fate: Fate = f.losePulls && Self.isPull(request) ? .dropRequest
                    : roll < f.dropRequest ? .dropRequest
                    : roll < f.dropRequest + f.dropResponse ? .dropResponse
                    : roll < f.dropRequest + f.dropResponse + f.duplicate ? .duplicate : .forward
                return (fate, Int.random(in: 0...max(0, f.maxDelayMilliseconds), using: &s.rng), s.target)
            }
            SystemProcess.sleep(microseconds: UInt32(delay * 1000))
            switch fate {
            case .dropRequest:
                counts.withLock { $0.droppedRequests += 1 }
                return
            case .dropResponse:
                _ = Self.forward(request, to: target)
                counts.withLock { $0.droppedResponses += 1 }
                return
            case .duplicate:
                _ = Self.forward(request, to: target)
                counts.withLock { $0.duplicated += 1 }
                fallthrough
            case .forward:
                let began = Date()
                let response = Self.forward(request, to: target)
                if ProcessInfo.processInfo.environment["SYNC_TEST_VERBOSE"] != nil, Date().timeIntervalSince(began) > 2 {
                    print("proxy: \(String(decoding: request.prefix(60), as: UTF8.self).split(separator: "\r\n").first ?? "") took \(Date().timeIntervalSince(began)) s, answered \(response != nil)")
                }
                guard let response, !(state.withLock { $0.faults.losePulls } && Self.isPull(request)) else { return }
                counts.withLock { $0.forwarded += 1 }
                SystemProcess.sleep(microseconds: UInt32(delay * 1000))
                guard Self.writeAll(client, response) else { return }
            }
        }
    }

    private static func isPull(_ request: [UInt8]) -> Bool {
        let line = String(decoding: request.prefix(200), as: UTF8.self).split(separator: "\r\n").first ?? ""
        return line.hasPrefix("POST ") && line.contains("/pull ")
    }

    /// Sends one request to the server on a connection of its own and returns its answer (nil: none came).
    private static func forward(_ request: [UInt8], to port: Int) -> [UInt8]? {
        guard let fd = LoopbackSocket.connect(port: port) else { return nil }
        defer { LoopbackSocket.close(fd) }
        guard writeAll(fd, request) else { return nil }
        var buffer = [UInt8]()
        return readMessage(fd, &buffer)
    }

    /// Reads one HTTP message (head, then a `Content-Length` body) from `fd`; bytes after it stay in `buffer`.
    /// A request that asks to be told to go on (`Expect: 100-continue`, as curl does for larger bodies) is.
    private static func readMessage(_ fd: Int32, _ buffer: inout [UInt8], answeringExpect: Bool = false) -> [UInt8]? {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while true {
            if headEnd == nil, let r = buffer.firstRange(of: separator) {
                headEnd = r.upperBound
                if answeringExpect, String(decoding: buffer[..<r.upperBound], as: UTF8.self).lowercased().contains("\r\nexpect: 100-continue") {
                    guard writeAll(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return nil }
                }
            }
            if let headEnd {
                let head = String(decoding: buffer[..<headEnd], as: UTF8.self).lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if buffer.count >= headEnd + length {
                    let message = Array(buffer[..<(headEnd + length)])
                    buffer.removeFirst(headEnd + length)
                    return message
                }
            }
            guard LoopbackSocket.receive(fd, into: &buffer) else { return nil }
        }
    }

    /// The request without its `Expect` header (the proxy already told the client to go on).
    private static func withoutExpect(_ request: [UInt8]) -> [UInt8] {
        guard let r = request.firstRange(of: [13, 10, 13, 10] as [UInt8]) else { return request }
        let head = String(decoding: request[..<r.lowerBound], as: UTF8.self)
        let kept = head.components(separatedBy: "\r\n").filter { !$0.lowercased().hasPrefix("expect:") }
        return Array((kept.joined(separator: "\r\n") + "\r\n\r\n").utf8) + request[r.upperBound...]
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool { LoopbackSocket.send(fd, bytes) }

}
