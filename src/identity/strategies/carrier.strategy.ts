import { Strategy as PassportBase } from 'passport';
import type { CarrierRequest } from '../app-passport.js';

type Verify = (credential: string, done: (err: unknown, user?: unknown) => void) => void;

/**
 * A passport strategy for one credential carrier that no published strategy reads (the
 * `?api_key=` query parameter). `extract` finds the credential; when there is none the strategy
 * fails (never throws); otherwise `verify` (the Nest strategy's `validate`) decides.
 */
export class CarrierStrategy extends PassportBase {
  constructor(
    name: string,
    private readonly extract: (req: CarrierRequest) => string | undefined,
    private readonly verify: Verify,
  ) {
    super();
    this.name = name;
  }

  override authenticate(req: CarrierRequest): void {
    const credential = this.extract(req);
    if (!credential) {
      this.fail(this.name ?? 'credentials', 401);
      return;
    }
    this.verify(credential, (err, user) => {
      if (err) {
        this.error(err instanceof Error ? err : new Error('credential check failed'));
      } else if (!user) {
        this.fail(`invalid ${this.name ?? 'credentials'}`, 401);
      } else {
        this.success(user);
      }
    });
  }
}
