// What verifying a first-party access token costs per request (docs/performance.md, "JWT"):
//   node bench/jwt-verify.mjs [iterations]
// - passport-jwt: the app's strategy configuration (RS256 pinned, iss/aud checked, exp required by
//   the strategy's validate) run through a passport Authenticator as the credential door runs it;
// - jsonwebtoken: jwt.verify alone with the same options (the hand-written strategy this replaced);
// - cache hit: the door's verified-token cache (a Map lookup by the exact token string, exp check).
// Prints microseconds per verification (median of 5 runs) for each.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import passport from 'passport';
import { ExtractJwt, Strategy as JwtStrategy } from 'passport-jwt';

const iterations = Number(process.argv[2] ?? 4000);
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const issuer = 'http://atrium.test';
const audience = 'atrium-api';
const token = jwt.sign({ role: 'USER' }, privateKey, {
  algorithm: 'RS256',
  subject: 'usr_bench',
  issuer,
  audience,
  expiresIn: 900,
  jwtid: randomBytes(12).toString('base64url'),
});

const authenticator = new passport.Authenticator();
authenticator.use(
  'jwt',
  new JwtStrategy(
    {
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      secretOrKey: publicKey,
      algorithms: ['RS256'],
      issuer,
      audience,
      ignoreExpiration: false,
    },
    (payload, done) => done(null, typeof payload.exp === 'number' ? payload : false),
  ),
);
const viaPassport = () =>
  new Promise((resolve, reject) => {
    const req = { headers: { authorization: `Bearer ${token}` }, query: {} };
    authenticator.authenticate('jwt', { session: false }, (err, user) =>
      err ? reject(err) : resolve(user),
    )(req, {}, reject);
  });
const viaJsonwebtoken = () =>
  Promise.resolve(jwt.verify(token, publicKey, { algorithms: ['RS256'], issuer, audience }));
const cache = new Map([[token, jwt.decode(token)]]);
const viaCache = () => {
  const claims = cache.get(token);
  return Promise.resolve(claims && claims.exp * 1000 > Date.now() ? claims : undefined);
};

async function measure(fn) {
  for (let i = 0; i < 200; i++) {
    await fn();
  } // warm-up
  const runs = [];
  for (let r = 0; r < 5; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) {
      if (!(await fn())) {
        throw new Error('verification failed');
      }
    }
    runs.push(Number(process.hrtime.bigint() - start) / 1000 / iterations);
  }
  runs.sort((a, b) => a - b);
  return runs[2];
}

const results = {
  'passport-jwt (per request without a cache)': await measure(viaPassport),
  'jsonwebtoken.verify (the replaced hand-written strategy)': await measure(viaJsonwebtoken),
  'verified-token cache hit': await measure(viaCache),
};
for (const [name, us] of Object.entries(results)) {
  console.log(`${name.padEnd(58)} ${us.toFixed(2).padStart(8)} µs`);
}
