import Foundation

/// Where and as whom a Realm syncs (`Realm.Configuration.syncConfiguration`; the session is the `StrataSync`
/// library's). Every file syncs one partition of one server; a token names the partitions its user may read
/// and write.
public struct SyncConfiguration: Sendable {
    /// The server's base URL (`https://sync.example.com`): requests go to `/v1/partitions/{partition}/...` below it.
    public var serverURL: URL
    /// The partition this file holds: 1-128 of `A-Z a-z 0-9 - _ .`.
    public var partition: String
    /// Gives a signed token for the server (a JWT from your own login service). Asked again after the server
    /// refuses a token, so a provider that refreshes an expired one keeps the session going.
    public var token: @Sendable () async throws -> String
    /// Told of each error the session meets (the session goes on retrying, except after `forbidden` and
    /// `malformed`, which stop it: `SyncSession.state` becomes `.invalid`).
    public var errorHandler: (@Sendable (any Error) -> Void)?
    /// The most objects one answer of a snapshot holds (a new file's first download comes in pages); nil: the
    /// protocol's default. The server may give fewer.
    package var snapshotPage: Int?

    public init(serverURL: URL, partition: String, token: @escaping @Sendable () async throws -> String,
                errorHandler: (@Sendable (any Error) -> Void)? = nil) {
        self.serverURL = serverURL
        self.partition = partition
        self.token = token
        self.errorHandler = errorHandler
    }
}
