// The AMS and CTS codecs against Tests/Vectors/media.json: every PDU in
// both directions (decoded from the vector's hex to its fields, and encoded
// from its fields to the same hex), and the errors of malformed ones.

import Foundation
import Testing
import ANCSTestSupport
@testable import ANCS

private let vectors: JSONValue = {
    do { return try JSONValue(parsing: Data(contentsOf: PackagePaths.mediaVectors)) } catch { fatalError("media.json: \(error)") }
}()

private func cases(_ path: String...) -> [JSONValue] {
    var value: JSONValue? = vectors
    for key in path { value = value?[key] }
    guard case .array(let items)? = value else { Issue.record("media.json has no array at \(path)"); return [] }
    return items
}

private func hex(_ value: JSONValue?) -> [UInt8] {
    guard let text = value?.string, let bytes = try? Hex.bytes(text) else { Issue.record("not hex: \(String(describing: value))"); return [] }
    return bytes
}

private func int(_ value: JSONValue?) -> Int {
    guard case .number(let number)? = value else { Issue.record("not a number: \(String(describing: value))"); return -1 }
    return Int(number)
}

private func double(_ value: JSONValue?) -> Double {
    guard case .number(let number)? = value else { Issue.record("not a number: \(String(describing: value))"); return .nan }
    return number
}

private func ints(_ value: JSONValue?) -> [Int] {
    guard case .array(let items)? = value else { return [] }
    return items.map { int($0) }
}

@Suite struct AMSCodecTests {
    @Test func remoteCommandWrites() throws {
        let all = cases("ams", "remoteCommandWrite")
        #expect(all.count == 3)
        for vector in all {
            let command = try RemoteCommandID.decode(write: hex(vector["hex"]))
            #expect(command.rawValue == UInt8(int(vector["command"])))
            #expect(command.name == vector["name"]?.string)
            #expect(RemoteCommandID(name: vector["name"]!.string!) == command)
            #expect([command.rawValue] == hex(vector["hex"]))
        }
    }

    @Test func remoteCommandNotifications() {
        for vector in cases("ams", "remoteCommandNotification") {
            let commands = RemoteCommandList.decode(hex(vector["hex"]))
            #expect(commands.map { Int($0.rawValue) } == ints(vector["commands"]), "\(vector)")
            #expect(RemoteCommandList.encode(commands) == hex(vector["hex"]))
        }
        #expect(RemoteCommandID.all.count == 14)
        #expect(RemoteCommandID(rawValue: 200).description == "200")
    }

    @Test func registrations() throws {
        for vector in cases("ams", "registration") {
            let registration = try EntityRegistration.decode(hex(vector["hex"]))
            #expect(Int(registration.entity.rawValue) == int(vector["entity"]))
            #expect(registration.attributeIDs.map { Int($0) } == ints(vector["attributes"]))
            let built = EntityRegistration(EntityID(rawValue: UInt8(int(vector["entity"]))), ints(vector["attributes"]).map { UInt8($0) })
            #expect(built.encode() == hex(vector["hex"]))
        }
        #expect(EntityRegistration.all.map { $0.encode() } == [[0, 0, 1, 2], [1, 0, 1, 2, 3], [2, 0, 1, 2, 3]])
    }

    @Test func attributeSelections() throws {
        for vector in cases("ams", "attributeSelection") {
            let attribute = try MediaAttribute.decode(selection: hex(vector["hex"]))
            #expect(attribute == MediaAttribute(EntityID(rawValue: UInt8(int(vector["entity"]))), UInt8(int(vector["attribute"]))))
            #expect(attribute.encodeSelection() == hex(vector["hex"]))
        }
    }

    @Test func entityUpdates() throws {
        for vector in cases("ams", "entityUpdate") {
            let bytes = hex(vector["hex"])
            let update = try EntityUpdate.decode(bytes)
            let value = vector["value"]?.string.map { AttributeValue($0) } ?? AttributeValue(bytes: hex(vector["valueHex"]))
            #expect(Int(update.attribute.entity.rawValue) == int(vector["entity"]))
            #expect(Int(update.attribute.attributeID) == int(vector["attribute"]))
            #expect(Int(update.flags.rawValue) == int(vector["flags"]))
            #expect(update.value == value)
            #expect(update.isTruncated == (int(vector["flags"]) & 1 == 1))
            #expect(EntityUpdate(update.attribute, value, flags: EntityUpdateFlags(rawValue: UInt8(int(vector["flags"])))).encode() == bytes)
        }
    }

    @Test func aValueCutInsideACharacterReadsWithoutIt() throws {
        let update = try EntityUpdate.decode([2, 2, 1] + Array("Café".utf8).prefix(4))
        #expect(update.value.string == "Caf")
        #expect(update.isTruncated)
    }

    @Test func playbackInfo() {
        for vector in cases("ams", "playbackInfo") {
            let text = vector["text"]!.string!
            guard let info = PlaybackInfo(AttributeValue(text)) else { Issue.record("\(text) not read"); continue }
            #expect(info.state.rawValue == int(vector["state"]))
            #expect(info.rate == double(vector["rate"]))
            #expect(abs(info.elapsed - double(vector["elapsed"])) < 1e-9)
            #expect(info.value.string == (vector["canonical"]?.string ?? text))
        }
        for case .string(let text) in cases("ams", "invalidPlaybackInfo") {
            #expect(PlaybackInfo(AttributeValue(text)) == nil, "\(text)")
        }
    }

    @Test func fittingANotificationToTheMTU() throws {
        for vector in cases("ams", "fitting") {
            let update = EntityUpdate.fitting(.title, AttributeValue(vector["value"]!.string!), mtu: int(vector["mtu"]))
            #expect(update.encode() == hex(vector["hex"]), "\(vector["name"]!)")
            #expect(update.encode().count <= int(vector["mtu"]) - 3)
        }
    }

    @Test func malformedPDUsSayWhatAndWhere() {
        for vector in cases("ams", "invalid") {
            let bytes = hex(vector["hex"])
            let error: MediaDecodingError?
            switch vector["pdu"]?.string {
            case "entityUpdate": error = catching { () throws(MediaDecodingError) in _ = try EntityUpdate.decode(bytes) }
            case "registration": error = catching { () throws(MediaDecodingError) in _ = try EntityRegistration.decode(bytes) }
            case "attributeSelection": error = catching { () throws(MediaDecodingError) in _ = try MediaAttribute.decode(selection: bytes) }
            case "remoteCommandWrite": error = catching { () throws(MediaDecodingError) in _ = try RemoteCommandID.decode(write: bytes) }
            default: Issue.record("unknown pdu in \(vector)"); continue
            }
            #expect(error?.description == vector["error"]?.string)
        }
    }

    @Test func numbersAsAMSWritesThem() {
        #expect(MediaNumber.text(1.0) == Array("1.0".utf8))
        #expect(MediaNumber.text(0.5) == Array("0.5".utf8))
        #expect(MediaNumber.text(254.123) == Array("254.123".utf8))
        #expect(MediaNumber.text(-2.0) == Array("-2.0".utf8))
        #expect(MediaNumber.text(0.0004) == Array("0.0".utf8))
        #expect(MediaNumber.text(Double.nan) == Array("0.0".utf8))
        #expect(MediaNumber.text(1e300) == Array("0.0".utf8))
        #expect(MediaNumber.decimal(Array(".5".utf8)) == 0.5)
        #expect(MediaNumber.decimal(Array("12.".utf8)) == 12)
        #expect(MediaNumber.decimal(Array("-".utf8)) == nil)
        #expect(MediaNumber.decimal(Array("1.2.3".utf8)) == nil)
        #expect(MediaNumber.decimal(Array("12345678901234567890".utf8)) == nil)
        #expect(MediaNumber.integer(Array("-3".utf8)) == -3)
        #expect(MediaNumber.integer(Array("3a".utf8)) == nil)
        #expect(MediaNumber.integer(Array("".utf8)) == nil)
    }

    @Test func attributeNames() {
        #expect(MediaAttribute.all.map(\.description) == [
            "playerName", "playbackInfo", "volume", "queueIndex", "queueCount", "shuffleMode", "repeatMode",
            "artist", "album", "title", "duration"])
        #expect(MediaAttribute(EntityID(rawValue: 7), 9).description == "7/9")
        #expect(AMSCharacteristic.allCases.map { AMSCharacteristic(uuid: $0.uuid) } == AMSCharacteristic.allCases)
        #expect(AMSUUID.service.description == "89D3502B-0F36-433A-8EF4-C502AD55F8DC")
        #expect(AMSUUID.remoteCommand.description == "9B3C81D8-57B1-4A8A-B8DF-0E56F7CA51C2")
        #expect(AMSUUID.entityUpdate.description == "2F7CABCE-808D-411F-9A0C-BB92BA96C102")
        #expect(AMSUUID.entityAttribute.description == "C6B2F38C-23AB-46D8-A6AB-A3A870BBD5D7")
    }
}

@Suite struct CTSCodecTests {
    @Test func currentTime() throws {
        for vector in cases("cts", "currentTime") {
            let bytes = hex(vector["hex"])
            let time = try CurrentTime.decode(bytes)
            let expected = CurrentTime(
                year: int(vector["year"]), month: int(vector["month"]), day: int(vector["day"]),
                hour: int(vector["hour"]), minute: int(vector["minute"]), second: int(vector["second"]),
                dayOfWeek: int(vector["dayOfWeek"]), fractions256: int(vector["fractions256"]),
                adjustReason: AdjustReason(rawValue: UInt8(int(vector["adjustReason"]))))
            #expect(time == expected, "\(vector["name"]!)")
            #expect(expected.encode() == bytes)
        }
    }

    @Test func localTimeInformation() throws {
        for vector in cases("cts", "localTimeInformation") {
            let bytes = hex(vector["hex"])
            let zone = try LocalTimeInformation.decode(bytes)
            #expect(Int(zone.timeZone) == int(vector["timeZone"]))
            #expect(Int(zone.dstOffset) == int(vector["dstOffset"]))
            if vector["utcOffsetMinutes"] == .null { #expect(zone.utcOffsetMinutes == nil) } else { #expect(zone.utcOffsetMinutes == int(vector["utcOffsetMinutes"])) }
            #expect(zone.description == vector["text"]?.string)
            #expect(zone.encode() == bytes)
        }
        #expect(LocalTimeInformation(utcOffsetMinutes: -240, dstOffsetMinutes: 60).encode() == [0xEC, 4])
    }

    @Test func malformedValuesSayWhatAndWhere() {
        for vector in cases("cts", "invalid") {
            let bytes = hex(vector["hex"])
            let error: MediaDecodingError?
            switch vector["pdu"]?.string {
            case "currentTime": error = catching { () throws(MediaDecodingError) in _ = try CurrentTime.decode(bytes) }
            case "localTimeInformation": error = catching { () throws(MediaDecodingError) in _ = try LocalTimeInformation.decode(bytes) }
            default: Issue.record("unknown pdu in \(vector)"); continue
            }
            #expect(error?.description == vector["error"]?.string)
        }
    }

    @Test func anANCSDateWithThePhonesZone() {
        let date = ANCSDate(year: 2026, month: 11, day: 28, hour: 14, minute: 53, second: 7)
        #expect(date.iso8601(in: LocalTimeInformation(timeZone: 4, dstOffset: 0)) == "2026-11-28T14:53:07+01:00")
        #expect(date.iso8601(in: LocalTimeInformation(timeZone: -14, dstOffset: 0)) == "2026-11-28T14:53:07-03:30")
        #expect(date.iso8601(in: LocalTimeInformation(timeZone: 0, dstOffset: 0)) == "2026-11-28T14:53:07Z")
        #expect(date.iso8601(in: LocalTimeInformation(timeZone: -128, dstOffset: 0)) == nil)
    }

    @Test func theClockRunsAcrossDaysMonthsAndYears() {
        let eve = CurrentTime(year: 1999, month: 12, day: 31, hour: 23, minute: 59, second: 59, dayOfWeek: 5)
        let next = eve.adding(seconds: 1)
        #expect([next.year, next.month, next.day, next.hour, next.minute, next.second, next.dayOfWeek] as [Int] == [2000, 1, 1, 0, 0, 0, 6])
        let leap = CurrentTime(year: 2024, month: 2, day: 28, hour: 12, minute: 0, second: 0, dayOfWeek: 3).adding(seconds: 86_400)
        #expect([leap.month, leap.day, leap.dayOfWeek] as [Int] == [2, 29, 4])
        let century = CurrentTime(year: 2100, month: 2, day: 28, hour: 0, minute: 0, second: 0).adding(seconds: 86_400)
        #expect([century.month, century.day, century.dayOfWeek] as [Int] == [3, 1, 0])
        let year = CurrentTime(year: 2026, month: 11, day: 28, hour: 14, minute: 53, second: 7, dayOfWeek: 6).adding(seconds: 365 * 86_400)
        #expect([year.year, year.month, year.day, year.dayOfWeek] as [Int] == [2027, 11, 28, 7])
        let unknownDate = CurrentTime(year: 0, month: 0, day: 0, hour: 23, minute: 0, second: 0).adding(seconds: 7200)
        #expect([unknownDate.year, unknownDate.day, unknownDate.hour] as [Int] == [0, 0, 1])
    }
}

private func catching(_ body: () throws(MediaDecodingError) -> Void) -> MediaDecodingError? {
    do { try body() } catch { return error }
    return nil
}
