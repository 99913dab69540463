"""What the host's roles share: the line protocol's output, the ANCS, AMS and
CTS UUIDs, and small helpers. The transport, the device, pairing, scanning and
connecting, and the command reader are `Session` (session.py)."""
import logging
import sys

from bumble import core

PROTOCOL = 'ancs-bumble 2'


class AncsUUIDs:
    """The ANCS UUIDs. They come from the Swift side (--ancs-uuids), which has
    the one copy of them (ANCSUUID in the core); set once by `configure`. The
    characteristics go by their short names in the line protocol
    (PROTOCOL.md): `uuids` maps each to its UUID."""

    def __init__(self):
        self.service = None
        self.uuids = {}

    def configure(self, uuids):
        self.service = uuids[0]
        self.uuids.update(zip(NAMES, uuids[1:]))


# The characteristics' short names; NOTIFYING are the two that notify, in the order ANCS lists them.
NAMES = ('ns', 'cp', 'ds')
NOTIFYING = ('ns', 'ds')
ANCS = AncsUUIDs()


class MediaUUIDs:
    """The AMS and CTS UUIDs (--media-uuids, from the Swift side as the ANCS
    ones are), as Bumble UUIDs; `services` is empty until `configure`, and
    then the host neither discovers (consume) nor publishes (serve) them."""

    def __init__(self):
        self.services = {}  # 'ams'|'cts' -> (service UUID, {short name: UUID}, required names)

    @property
    def enabled(self):
        return bool(self.services)

    def configure(self, uuids):
        ams, rc, eu, ea, cts, ct, lt = (short_form(core.UUID(uuid)) for uuid in uuids)
        self.services = {
            'ams': (ams, {'rc': rc, 'eu': eu, 'ea': ea}, ('rc', 'eu', 'ea')),
            'cts': (cts, {'ct': ct, 'lt': lt}, ('ct',)),
        }


def short_form(uuid):
    """A UUID of the Bluetooth base (0000xxxx-0000-1000-8000-00805F9B34FB) in
    its 16-bit form: primary service discovery sends the UUID as given, and a
    peer matches a 16-bit service only by its 2 bytes."""
    full = uuid.to_bytes(force_128=True)
    if full[:12] == core.UUID.BASE_UUID and full[14:] == bytes(2):
        return core.UUID(f'{int.from_bytes(full[12:14], "little"):04X}')
    return uuid


# The media characteristics' short names (PROTOCOL.md): those that notify,
# those written (consume `write-to`, serve `media-write`), those read
# (consume `read`, serve `media-read`).
MEDIA_SERVICES = ('ams', 'cts')
MEDIA_NOTIFYING = ('rc', 'eu', 'ct')
MEDIA_WRITABLE = ('rc', 'eu', 'ea')
MEDIA_READABLE = ('ea', 'ct', 'lt')
MEDIA = MediaUUIDs()
# A write or read held for the Swift process (serve) and not answered within
# this time is answered with 0x0E (Unlikely Error), before the client's 30 s
# ATT timeout.
ANSWER_TIMEOUT = 25.0
ATT_UNLIKELY_ERROR = 0x0E
# A Service Changed indication not confirmed within this time counts as not delivered.
INDICATION_TIMEOUT = 10.0

log = logging.getLogger('ancs-bumble-host')



def emit(*fields):
    """One event line on stdout."""
    sys.stdout.write(' '.join(str(f) for f in fields) + '\n')
    sys.stdout.flush()


def fail(message):
    emit('fatal', message.replace('\n', ' '))
    sys.exit(2)


def one_line(text):
    return ' '.join(str(text).split())


def status(text):
    """What the host is doing (scanning, connecting, pairing), for the user."""
    emit('status', one_line(text))


class LinkFailure(Exception):
    pass


def parse_hex(text):
    return bytes.fromhex(text) if text != '-' else b''


def hex_or_dash(data):
    return bytes(data).hex() if data else '-'
