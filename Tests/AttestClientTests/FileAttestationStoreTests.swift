import AttestClient
import Foundation
import XCTest

/// `FileAttestationStore` (the Linux default): private files, atomic replacement, removal, and a
/// registration that survives a relaunch with the software key restored from it.
final class FileAttestationStoreTests: XCTestCase {
    func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("attest-client-store-\(UUID().uuidString)")
    }

    func testReadTellsAbsentFromUnreadable() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = FileAttestationStore(directory: dir)
        XCTAssertNil(try store.read("registration"), "absent: nil, no error")
        try store.set(Data("r".utf8), for: "registration")
        XCTAssertEqual(try store.read("registration"), Data("r".utf8))
        // An item that exists but cannot be read (here a directory in its place) throws.
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("device-key"), withIntermediateDirectories: true)
        XCTAssertThrowsError(try store.read("device-key"))
        XCTAssertNil(store.data(for: "device-key"))
    }

    func testItemsArePrivateFilesReplacedAndRemoved() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = FileAttestationStore(directory: dir)
        XCTAssertNil(store.data(for: "device-key"))
        try store.set(Data("one".utf8), for: "device-key")
        try store.set(Data("two".utf8), for: "device-key")
        XCTAssertEqual(store.data(for: "device-key"), Data("two".utf8))
        let attributes = try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent("device-key").path)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        let dirAttributes = try FileManager.default.attributesOfItem(atPath: dir.path)
        XCTAssertEqual((dirAttributes[.posixPermissions] as? NSNumber)?.intValue, 0o700)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["device-key"], "no temporary file left")
        try store.set(nil, for: "device-key")
        XCTAssertNil(store.data(for: "device-key"))
        try store.set(nil, for: "device-key")  // removing nothing is fine
        // A name cannot leave the directory.
        try store.set(Data("x".utf8), for: "../escape")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.deletingLastPathComponent().appendingPathComponent("escape").path))
        XCTAssertEqual(store.data(for: "../escape"), Data("x".utf8))
    }

    func testRegistrationAndSoftwareKeySurviveARelaunchOnDisk() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clock = FakeClock()
        let gateway = FakeGateway(clock: clock)
        func launch() -> AttestClient {
            var configuration = AttestClientConfiguration(gateway: URL(string: "https://gateway.test")!)
            configuration.automaticRenewal = false
            return AttestClient(configuration: configuration, appAttest: UnavailableAppAttestService(), deviceKeys: SoftwareKeyFactory(),
                                store: FileAttestationStore(directory: dir), transport: gateway, clock: clock)
        }
        let first = launch().attest()
        XCTAssertEqual(first.verdict, .passed)
        let requests = gateway.requests.count
        let second = launch()
        XCTAssertEqual(second.storedAttestation(), first)
        XCTAssertEqual(gateway.requests.count, requests, "no request for a stored result")
        // The restored key signs: the gateway accepts a request from the relaunched client.
        XCTAssertEqual(second.send(SDKHarness.order(1)).verdict, .accepted)
        // Failing variant: another directory holds nothing.
        let elsewhere = AttestClient(configuration: AttestClientConfiguration(gateway: URL(string: "https://gateway.test")!),
                                     appAttest: UnavailableAppAttestService(), deviceKeys: SoftwareKeyFactory(),
                                     store: FileAttestationStore(directory: directory()), transport: gateway, clock: clock)
        XCTAssertNil(elsewhere.storedAttestation())
    }
}
