import Foundation
import Strata

enum M1 {
    final class Person: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var firstName = ""
        @Persisted var lastName = ""
        @Persisted var age = 0
        @Persisted var nickname: String?
    }
}

/// firstName + lastName combined into fullName; age renamed yearsSinceBirth; nickname made required.
enum M2 {
    final class Person: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var fullName = ""
        @Persisted var yearsSinceBirth = 0
        @Persisted var nickname = "none"
    }
}

/// yearsSinceBirth changed from Int to String.
enum M3 {
    final class Person: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var fullName = ""
        @Persisted var yearsSinceBirth = ""
        @Persisted var nickname = "none"
    }
}

/// Primary keys added and changed.
enum K0 {
    final class Tag: Object {
        @Persisted var code = 0
        @Persisted var label = ""
    }
}

enum K1 {
    final class Tag: Object {
        @Persisted(primaryKey: true) var code = 0
        @Persisted var label = ""
    }
}

enum K2 {
    final class Tag: Object {
        @Persisted(primaryKey: true) var label = ""
        @Persisted var code = 0
    }
}

/// Seed 001's linear migrations: email deleted at version 2 and re-introduced at version 3.
enum L1 {
    final class Person: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var email: String?
    }
}

enum L2 {
    final class Person: Object {
        @Persisted(primaryKey: true) var id: Int
    }
}

enum L3 {
    final class Person: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var email: String?
    }
}
