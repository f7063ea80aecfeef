import Foundation
import Strata
import StrataSyncWire

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sync's requests over URLSession: JSON in, JSON or a `WireError` out. A token is asked for once and kept
/// until the server refuses it.
final class SyncTransport: @unchecked Sendable {
    private let sync: SyncConfiguration
    private let session: URLSession
    private let token = NSLock()
    private var cachedToken: String?

    init(sync: SyncConfiguration) {
        self.sync = sync
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 60
        configuration.httpMaximumConnectionsPerHost = 4
        session = URLSession(configuration: configuration)
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// Posts `body` to the partition's `action` and decodes the answer.
    /// `wait` is how long the server may hold the request (a long poll); the request times out 15 s after it.
    func send<Body: Encodable, Answer: Decodable>(_ action: String, _ body: Body, wait: Duration = .zero) async throws -> Answer {
        let url = sync.serverURL.appendingPathComponent("v1/partitions/\(sync.partition)/\(action)")
        var request = URLRequest(url: url)
        request.timeoutInterval = Double(wait.components.seconds) + 15
        #if canImport(FoundationNetworking)
        // Foundation's URLSession on Linux (libcurl) resends a request whose reused connection closed unanswered
        // without its body, and then waits for the timeout: one connection per request avoids the resend.
        request.setValue("close", forHTTPHeaderField: "Connection")
        #endif
        request.httpMethod = "POST"
        request.httpBody = try SyncWire.encoder.encode(body)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer \(try await currentToken())", forHTTPHeaderField: "Authorization")
        let (data, response) = try await Self.perform(request, in: session)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200 else {
            let refusal = (try? JSONDecoder().decode(WireError.self, from: data))
                ?? WireError(.unavailable, "the server answered \(status) to \(action) at \(url)")
            if refusal.code == .unauthorized { forgetToken() }
            throw refusal
        }
        return try SyncWire.decode(Answer.self, from: data)
    }

    /// The request's answer. Cancelling the calling task cancels the request, from another thread: the
    /// cancellation handler runs holding the task's lock, FoundationNetworking's `cancel()` waits for its session's
    /// queue, and a transfer finishing on that queue resumes the task, which needs the lock. Linux's
    /// `URLSession.data(for:)` cancels in place, and deadlocked so (seen when a session stopped while a page of a
    /// snapshot arrived).
    static func perform(_ request: URLRequest, in session: URLSession) async throws -> (Data, URLResponse) {
        let handle = RequestHandle()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (answer: CheckedContinuation<(Data, URLResponse), any Error>) in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        answer.resume(throwing: error)
                    } else if let response {
                        answer.resume(returning: (data ?? Data(), response))
                    } else {
                        answer.resume(throwing: URLError(.badServerResponse))
                    }
                }
                handle.start(task)
            }
        } onCancel: {
            DispatchQueue.global().async { handle.cancel() }
        }
    }

    private func currentToken() async throws -> String {
        if let t = token.withLock({ cachedToken }) { return t }
        let fresh = try await sync.token()
        token.withLock { cachedToken = fresh }
        return fresh
    }

    private func forgetToken() {
        token.withLock { cachedToken = nil }
    }
}

/// A request's task, and whether it was cancelled (perhaps before it started).
private final class RequestHandle: @unchecked Sendable {
    private let lock = NSLock()
    private var task: URLSessionDataTask?
    private var cancelled = false

    /// Starts `task`, or cancels it when the request was cancelled already.
    func start(_ task: URLSessionDataTask) {
        let cancelled = lock.withLock {
            self.task = task
            return self.cancelled
        }
        task.resume()
        if cancelled { task.cancel() }
    }

    func cancel() {
        let task = lock.withLock {
            cancelled = true
            return self.task
        }
        task?.cancel()
    }
}
