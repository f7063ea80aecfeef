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
        let (data, response) = try await session.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200 else {
            let refusal = (try? JSONDecoder().decode(WireError.self, from: data))
                ?? WireError(.unavailable, "the server answered \(status) to \(action) at \(url)")
            if refusal.code == .unauthorized { forgetToken() }
            throw refusal
        }
        return try SyncWire.decode(Answer.self, from: data)
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
