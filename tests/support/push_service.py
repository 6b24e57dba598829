"""A Web Push service for tests, speaking the wire protocol (RFC 8030) on 127.0.0.1.

A test makes a :class:`Device` the way a browser does (a P-256 key pair and a 16-byte auth
secret) and registers it; the service answers ``POST /push/<token>`` for it. Every request is
checked as a real push service would: ``Authorization: vapid t=<JWT>,k=<key>`` must carry an
ES256 JWT signed by ``k`` (verified with PyJWT, not the library that signed it) whose ``aud`` is
this service's origin, unexpired, with a ``sub``; ``Content-Encoding: aes128gcm`` and a ``TTL``.
The body is decrypted with ``http_ece`` and the device's private key, so a test reads exactly
what Fable sent. A device's ``answer`` decides the reply: ``201`` (taken), ``404``/``410``
(gone), or ``hang`` (no answer until the test releases it or 30 s pass).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

import http_ece
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["Device", "PushService", "Received"]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Device:
    """A browser's push subscription: its keys stay here, the test hands Fable the public parts."""

    token: str
    answer: int | str = 201
    private: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    auth_secret: bytes = field(default_factory=lambda: os.urandom(16))

    @property
    def p256dh(self) -> str:
        return _b64(self.private.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint))

    @property
    def auth(self) -> str:
        return _b64(self.auth_secret)


@dataclass(frozen=True)
class Received:
    token: str
    message: dict[str, Any]  # the decrypted payload
    claims: dict[str, Any]  # the VAPID JWT's claims
    vapid_key: str  # the k= of the Authorization header
    headers: dict[str, str]


class PushService:
    """The service's state: devices by token, what each received, and a valve for hangs."""

    def __init__(self) -> None:
        self.devices: dict[str, Device] = {}
        self.received: list[Received] = []
        self.refused: list[str] = []  # why requests were refused (a test expects none)
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()
        self.hanging = asyncio.Event()  # set when a request to a hanging device came in
        self.origin = ""  # http://127.0.0.1:PORT, set once it serves

    def device(self, token: str, answer: int | str = 201) -> Device:
        self.devices[token] = found = Device(token, answer)
        return found

    def endpoint(self, device: Device) -> str:
        return f"{self.origin}/push/{device.token}"

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/push/{token}", self._push, methods=["POST"])])

    async def _push(self, request: Request) -> Response:
        device = self.devices.get(request.path_params["token"])
        if device is None:
            return Response(status_code=404)
        body = await request.body()
        try:
            received = self._open(device, request, body)
        except (ValueError, KeyError, jwt.PyJWTError) as e:
            self.refused.append(f"{device.token}: {e}")
            return Response(str(e), status_code=401)
        if device.answer == "hang":
            self.hanging.set()
            await asyncio.wait_for(self.release.wait(), 30)
        self.received.append(received)
        self.arrived.set()
        return Response(status_code=device.answer if isinstance(device.answer, int) else 201)

    def _open(self, device: Device, request: Request, body: bytes) -> Received:
        scheme, _, params = request.headers["authorization"].partition(" ")
        if scheme.lower() != "vapid":
            raise ValueError(f"Authorization scheme {scheme!r} is not vapid")
        parts = dict(part.split("=", 1) for part in params.split(","))
        public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), _unb64(parts["k"]))
        claims = jwt.decode(parts["t"], public, algorithms=["ES256"], audience=self.origin,
                            options={"require": ["exp", "aud", "sub"]})
        if claims["exp"] > time.time() + 24 * 3600:
            raise ValueError("the JWT expires more than 24 hours ahead (RFC 8292)")
        if request.headers.get("content-encoding") != "aes128gcm" or "ttl" not in request.headers:
            raise ValueError(f"headers {dict(request.headers)!r} lack aes128gcm or TTL")
        plain = http_ece.decrypt(body, private_key=device.private, auth_secret=device.auth_secret,
                                 version="aes128gcm")
        return Received(device.token, json.loads(plain), claims, parts["k"], dict(request.headers))
