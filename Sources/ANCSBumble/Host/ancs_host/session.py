"""What both roles share: the transport and device, pairing, scanning and
connecting, and the command reader (`Session`), with the pairing delegate and
the capture it writes."""
import asyncio
import contextlib
import sys

from bumble import core, hci
from bumble.core import AdvertisingData
from bumble.device import Device
from bumble.keys import JsonKeyStore
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.snoop import BtSnooper
from bumble.transport import open_transport
from bumble.transport.common import SnoopingTransport

from .common import ANCS, LinkFailure, emit, fail, log, one_line, status


class FlushingSnooper(BtSnooper):
    """A btsnoop file written packet by packet, so it can be decoded while
    the host runs; packets after it is closed (the host shutting down while
    it scans) are dropped rather than written to a closed file."""

    def __init__(self, path):
        self.file = open(path, 'wb')  # noqa: SIM115 - closed by close()
        super().__init__(self.file)
        self.file.flush()

    def snoop(self, hci_packet, direction):
        if self.file.closed:
            return
        super().snoop(hci_packet, direction)
        self.file.flush()

    def close(self):
        self.file.close()


# A numeric comparison the Swift process is asked to confirm and does not
# answer within this time is answered no.
CONFIRM_TIMEOUT = 30.0


class ComparingDelegate(PairingDelegate):
    """Numeric comparison, as an iPhone pairs: DisplayYesNo with MITM
    protection. The 6-digit code is reported (`pairing-code`) and confirmed,
    or with --ask-pairing confirmed by the `confirm` line that answers it."""

    def __init__(self, connection, session):
        super().__init__(io_capability=PairingDelegate.IoCapability.DISPLAY_OUTPUT_AND_YES_NO_INPUT)
        self.connection = connection
        self.session = session

    async def compare_numbers(self, number, digits):
        code = f'{number:0{digits}d}'
        if not self.session.args.ask_pairing:
            emit('pairing-code', self.connection.handle, code)
            return True
        answer = asyncio.get_running_loop().create_future()
        self.session.questions[self.connection.handle] = answer
        emit('pairing-code', self.connection.handle, code, 'ask')
        try:
            return await asyncio.wait_for(answer, CONFIRM_TIMEOUT)
        except asyncio.TimeoutError:
            log.warning('numeric comparison on %d not answered in %.0f s: no', self.connection.handle, CONFIRM_TIMEOUT)
            return False
        finally:
            self.session.questions.pop(self.connection.handle, None)


class Session:
    """What both roles share: the transport, the device, pairing and the command reader."""

    def __init__(self, args):
        self.args = args
        self.device = None
        self.transport = None
        self.questions = {}  # connection handle -> Future of the `confirm` answer

    async def open(self):
        args = self.args
        try:
            transport = await open_transport(args.transport)
        except Exception as error:  # noqa: BLE001 - any failure is reported as a line
            fail(f'cannot open transport {args.transport}: {type(error).__name__}: {error}')
        if args.snoop:
            try:
                snooper = FlushingSnooper(args.snoop)
            except OSError as error:
                fail(f'cannot write the capture {args.snoop}: {error.strerror or error}')
            transport = SnoopingTransport.create_with(transport, contextlib.closing(snooper))
        self.transport = transport
        address = hci.Address(args.address, hci.Address.RANDOM_DEVICE_ADDRESS)
        device = Device.with_hci(args.name, address, transport.source, transport.sink)
        if args.keys:
            device.keystore = JsonKeyStore(None, args.keys)
        numeric = args.pairing == 'numeric'

        def pairing_config(connection):
            # numeric: as an iPhone, DisplayYesNo and MITM (numeric comparison
            # with a DisplayYesNo peer); just-works: NoInputNoOutput, no MITM.
            delegate = (ComparingDelegate(connection, self) if numeric
                        else PairingDelegate(PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT))
            return PairingConfig(sc=True, mitm=numeric, bonding=True,
                                 identity_address_type=hci.AddressType.RANDOM_DEVICE, delegate=delegate)
        device.pairing_config_factory = pairing_config
        device.le_simultaneous_enabled = False
        self.device = device

    def watch_pairing(self, connection):
        """Reports how a pairing on `connection` ends; a failed one ends the
        link at once (as a phone does), rather than leaving it up unencrypted."""
        def on_pairing(keys):
            mitm = keys.ltk is not None and keys.ltk.authenticated
            emit('paired', connection.handle, 'numeric' if mitm else 'just-works')

        def on_failure(reason):
            name = getattr(reason, 'name', None) or f'0x{int(reason):02X}'
            emit('pairing-failed', connection.handle, f'0x{int(reason):02X}', name)
            asyncio.get_running_loop().create_task(self.drop(connection))
        connection.on('pairing', on_pairing)
        connection.on('pairing_failure', on_failure)

    async def drop(self, connection):
        if connection.handle not in self.device.connections:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(connection.disconnect(), 2)

    async def disconnect_all(self):
        """Ends every link (the host is stopping)."""
        if self.device is None:
            return
        for connection in list(self.device.connections.values()):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(connection.disconnect(), 2)

    async def is_bonded(self, address):
        keystore = self.device.keystore
        if keystore is None:
            return False
        with contextlib.suppress(Exception):
            return await keystore.get(str(address)) is not None
        return False

    def advertising(self):
        """Connectable advertising data with the ANCS solicitation (virtual
        controllers carry no scan response, so it is in the advertising data)."""
        name = self.args.name.encode()
        data = bytes(AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (AdvertisingData.LIST_OF_128_BIT_SERVICE_SOLICITATION_UUIDS, bytes(core.UUID(ANCS.service))),
            (AdvertisingData.SHORTENED_LOCAL_NAME, name[:8]),
        ]))
        return data, bytes(AdvertisingData([(AdvertisingData.COMPLETE_LOCAL_NAME, name[:29])]))

    async def advertise(self):
        if self.device.is_advertising:
            return
        data, scan_response = self.advertising()
        with contextlib.suppress(Exception):
            await self.device.start_advertising(
                advertising_data=data, scan_response_data=scan_response,
                advertising_interval_min=100, advertising_interval_max=100)

    async def find(self, timeout):
        """The first connectable advertiser that solicits ANCS (or has the address --peer)."""
        device = self.device
        found = asyncio.get_running_loop().create_future()
        wanted = self.args.peer.upper() if self.args.peer else None

        def on_advertisement(advertisement):
            data = advertisement.data
            solicited = data.get(AdvertisingData.LIST_OF_128_BIT_SERVICE_SOLICITATION_UUIDS) or []
            ancs = any(str(uuid).upper() == ANCS.service for uuid in solicited)
            address = str(advertisement.address).replace('/P', '').upper()
            if advertisement.is_connectable and not found.done() and (address == wanted if wanted else ancs):
                found.set_result(advertisement.address)

        device.on('advertisement', on_advertisement)
        status(f'scanning for {wanted}' if wanted else 'scanning for an advertiser soliciting ANCS')
        await device.start_scanning(filter_duplicates=True)
        try:
            return await asyncio.wait_for(found, timeout)
        except asyncio.TimeoutError:
            what = f'no advertiser with the address {wanted}' if wanted else 'no advertiser soliciting ANCS'
            raise LinkFailure(f'{what} found within {timeout:g} s') from None
        finally:
            device.remove_listener('advertisement', on_advertisement)
            with contextlib.suppress(Exception):
                await device.stop_scanning()

    async def connect(self, timeout):
        """Scans (`find`) and connects."""
        address = await self.find(timeout)
        peer = str(address).replace('/P', '')
        status(f'connecting to {peer}')
        try:
            return await self.device.connect(address, timeout=timeout)
        except Exception as error:
            raise LinkFailure(f'cannot connect to {peer}: {type(error).__name__}: {one_line(error)}') from None

    async def secure(self, connection):
        """As central: re-encrypt with a stored bond, or pair."""
        peer = str(connection.peer_address).replace('/P', '')
        try:
            if await self.is_bonded(connection.peer_address):
                status(f'encrypting the link to {peer} with the stored bond')
                await asyncio.wait_for(connection.encrypt(), 20)
            else:
                status(f'pairing with {peer} ({self.args.pairing})')
                await asyncio.wait_for(connection.pair(), 20)
        except Exception as error:
            await self.drop(connection)
            if isinstance(error, asyncio.TimeoutError):
                raise LinkFailure(f'pairing with {peer}: no result within 20 s') from None
            if isinstance(error, core.ProtocolError) and isinstance(error.error_code, int):
                raise LinkFailure(f'pairing with {peer} failed: {error.error_name} (SMP 0x{error.error_code:02X})') from None
            raise LinkFailure(f'pairing with {peer} failed: {type(error).__name__}: {one_line(error)}') from None

    async def commands(self, handle):
        """Reads command lines from stdin until EOF, handing each to `handle` in order."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := await reader.readline():
            fields = line.decode('utf-8', 'replace').split()
            if not fields:
                continue
            try:
                if fields[0] == 'confirm':
                    answer = self.questions.get(int(fields[1]))
                    if answer is not None and not answer.done():
                        answer.set_result(fields[2] == 'yes')
                    continue
                await handle(fields)
            except (ValueError, IndexError, KeyError) as error:
                emit('error', f'bad command line {" ".join(fields)!r}: {error}')

    async def main(self):
        try:
            await self.run()
            await self.disconnect_all()
        finally:
            if self.transport is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.transport.close(), 2)
