import Foundation
import JWTKit
import StrataSyncWire

/// What a sync token grants: a signed JWT (HS256 or ES256) naming its user, when it expires, and the partitions
/// the user may read (pull) and write (push). Writing a partition does not grant reading it.
///
/// ```json
/// {"sub": "alice", "exp": 1767225600, "read": ["team-7"], "write": ["team-7"]}
/// ```
public struct SyncTokenClaims: JWTPayload, Equatable {
    public var sub: SubjectClaim
    public var exp: ExpirationClaim
    public var read: [String]
    public var write: [String]

    public init(subject: String, expires: Date, read: [String], write: [String]) {
        sub = SubjectClaim(value: subject)
        exp = ExpirationClaim(value: expires)
        self.read = read
        self.write = write
    }

    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
    }
}

/// Checks tokens against the server's keys.
public struct SyncTokenVerifier: Sendable {
    let keys: JWTKeyCollection

    /// Keys from an HS256 secret and/or an ES256 public key in PEM.
    public init(hs256Secret: String?, es256PublicKeyPEM: String?) async throws {
        let keys = JWTKeyCollection()
        if let hs256Secret {
            guard hs256Secret.utf8.count >= 32 else {
                throw WireError(.unavailable, "the HS256 secret must be at least 32 bytes")
            }
            await keys.add(hmac: HMACKey(from: hs256Secret), digestAlgorithm: .sha256)
        }
        if let es256PublicKeyPEM {
            await keys.add(ecdsa: try ES256PublicKey(pem: es256PublicKeyPEM))
        }
        guard hs256Secret != nil || es256PublicKeyPEM != nil else {
            throw WireError(.unavailable, "no key to check tokens with: give an HS256 secret or an ES256 public key")
        }
        self.keys = keys
    }

    /// The claims of the `Authorization` header's bearer token, or `unauthorized` saying what is wrong.
    public func claims(authorization: String?) async throws -> SyncTokenClaims {
        guard let authorization, authorization.hasPrefix("Bearer ") else {
            throw WireError(.unauthorized, "no token: send `Authorization: Bearer <token>`")
        }
        let token = String(authorization.dropFirst("Bearer ".count))
        do {
            return try await keys.verify(token, as: SyncTokenClaims.self)
        } catch let error as JWTError where error.errorType == .claimVerificationFailure {
            throw WireError(.unauthorized, "the token has expired: ask for a new one")
        } catch {
            throw WireError(.unauthorized, "the token is not valid (\(error))")
        }
    }
}

/// Signs tokens with an HS256 secret (the `token` command; an application's own token service does this).
public struct SyncTokenSigner: Sendable {
    let keys: JWTKeyCollection

    public init(hs256Secret: String) async {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: hs256Secret), digestAlgorithm: .sha256)
        self.keys = keys
    }

    public func sign(_ claims: SyncTokenClaims) async throws -> String {
        try await keys.sign(claims)
    }
}
