package ehrgateway.partner;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import ehrgateway.client.model.CallbackReply;
import ehrgateway.client.model.SendDemandContentResponse;
import ehrgateway.client.model.SendDocumentFileResultResponse;
import ehrgateway.client.model.SendRegisterDocumentResponse;
import ehrgateway.client.model.SendRegisterDocumentResultResponse;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The clinic's callback endpoint: JDK HttpServer only. It takes POST {base}/api/{Name}, checks the
 * callback token and the Standard Webhooks signature (HMAC-SHA256 of the JDK) over the raw body,
 * drops a repeated webhook-id, reads the body into the generated model of its callback and answers
 * {"status":"Success"}. Anything it refuses gets 401 and is counted.
 */
final class CallbackReceiver implements AutoCloseable {
  /** The generated model of each callback body, by callback name (the last path segment). */
  private static final Map<String, Class<?>> BODIES = Map.of(
      "SendRegisterDocumentResponse", SendRegisterDocumentResponse.class,
      "SendRegisterDocumentResultResponse", SendRegisterDocumentResultResponse.class,
      "SendDemandContentResponse", SendDemandContentResponse.class,
      "SendDocumentFileResultResponse", SendDocumentFileResultResponse.class);
  /** How far webhook-timestamp may be from this clock. */
  private static final Duration TOLERANCE = Duration.ofMinutes(5);

  private final HttpServer server;
  private final byte[] signingKey;
  private final byte[] callbackToken;
  private final ObjectMapper mapper;
  private final List<Object> bodies = new ArrayList<>();
  private Signed lastSigned;
  private final Set<String> webhookIds = new HashSet<>();
  private final List<String> refused = new ArrayList<>();

  /** A callback as it arrived: what its signature covers. */
  record Signed(String id, String timestamp, byte[] body, String signatures) {}

  /** secret: the clinic's `whsec_…` signing secret; callbackToken: the `token` header the gateway presents. */
  CallbackReceiver(int port, String secret, String callbackToken, ObjectMapper mapper) throws IOException {
    if (!secret.startsWith("whsec_")) throw new IllegalArgumentException("the signing secret starts with whsec_");
    this.signingKey = Base64.getDecoder().decode(secret.substring("whsec_".length()));
    this.callbackToken = callbackToken.getBytes(StandardCharsets.UTF_8);
    this.mapper = mapper;
    this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
    server.createContext("/api/", this::handle);
    server.start();
  }

  /** True when one of the space-separated `v1,<base64>` entries is the HMAC-SHA256 of `id.timestamp.body`. */
  static boolean signatureValid(byte[] key, String id, String timestamp, byte[] body, String signatures) throws GeneralSecurityException {
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(key, "HmacSHA256"));
    mac.update((id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8));
    byte[] expected = mac.doFinal(body);
    for (String entry : signatures.split(" ")) {
      if (!entry.startsWith("v1,")) continue;
      try {
        if (MessageDigest.isEqual(expected, Base64.getDecoder().decode(entry.substring(3)))) return true;
      } catch (IllegalArgumentException notBase64) {
        // another entry may still match
      }
    }
    return false;
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      byte[] body = exchange.getRequestBody().readAllBytes();
      String name = exchange.getRequestURI().getPath().replaceFirst("^.*/api/", "");
      String problem = problemOf(exchange, name, body);
      if (problem != null) {
        synchronized (this) {
          refused.add(name + ": " + problem);
        }
        reply(exchange, 401, "{\"status\":\"Error\"}".getBytes(StandardCharsets.UTF_8));
        return;
      }
      var headers = exchange.getRequestHeaders();
      String webhookId = headers.getFirst("webhook-id");
      Object parsed = mapper.readValue(body, BODIES.get(name));
      synchronized (this) {
        lastSigned = new Signed(webhookId, headers.getFirst("webhook-timestamp"), body, headers.getFirst("webhook-signature"));
        // A retry of a callback already taken carries the same webhook-id: answer it, keep one.
        if (webhookIds.add(webhookId)) bodies.add(parsed);
        notifyAll();
      }
      reply(exchange, 200, mapper.writeValueAsBytes(new CallbackReply().status(CallbackReply.StatusEnum.SUCCESS)));
    }
  }

  /** Why the callback is refused, or null. */
  private String problemOf(HttpExchange exchange, String name, byte[] body) {
    var headers = exchange.getRequestHeaders();
    if (!"POST".equals(exchange.getRequestMethod()) || !BODIES.containsKey(name)) return "not a callback";
    String token = headers.getFirst("token");
    if (token == null || !MessageDigest.isEqual(callbackToken, token.getBytes(StandardCharsets.UTF_8))) return "wrong callback token";
    String id = headers.getFirst("webhook-id");
    String timestamp = headers.getFirst("webhook-timestamp");
    String signatures = headers.getFirst("webhook-signature");
    if (id == null || timestamp == null || signatures == null) return "webhook headers missing";
    try {
      if (Duration.between(Instant.ofEpochSecond(Long.parseLong(timestamp)), Instant.now()).abs().compareTo(TOLERANCE) > 0) return "timestamp too far from this clock";
      if (!signatureValid(signingKey, id, timestamp, body, signatures)) return "signature does not match";
    } catch (NumberFormatException | GeneralSecurityException error) {
      return error.toString();
    }
    return null;
  }

  private static void reply(HttpExchange exchange, int status, byte[] json) throws IOException {
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    exchange.sendResponseHeaders(status, json.length);
    exchange.getResponseBody().write(json);
  }

  /** The first callback body of this type that matches, waiting up to `timeout` for it. */
  synchronized <T> T await(Class<T> type, Predicate<T> matches, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    for (;;) {
      for (Object body : bodies) if (type.isInstance(body) && matches.test(type.cast(body))) return type.cast(body);
      long left = deadline - System.nanoTime();
      if (left <= 0) throw new AssertionError("no " + type.getSimpleName() + " callback within " + timeout + "; refused: " + refused);
      wait(Math.max(1, left / 1_000_000));
    }
  }

  /** Every verified callback taken so far (one per webhook-id), and what was refused. */
  synchronized int taken() {
    return bodies.size();
  }

  synchronized List<String> refused() {
    return List.copyOf(refused);
  }

  /** Whether the last callback taken would still pass with one byte of its body changed (it must not). */
  synchronized boolean tamperedBodyPasses() throws GeneralSecurityException {
    byte[] tampered = lastSigned.body().clone();
    tampered[tampered.length / 2] ^= 1;
    return signatureValid(signingKey, lastSigned.id(), lastSigned.timestamp(), tampered, lastSigned.signatures());
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
