import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsString, Length, Matches, Max, Min } from 'class-validator';
import { CURRENCY_CODES } from '../currencies.js';
import { ORDER_STATUSES } from '../../domain/order.js';

/**
 * The validation rules of an order's members, defined once and applied to the REST body (snake_case)
 * and the GraphQL inputs (camelCase) alike (CONTRIBUTING.md, house style 4).
 */
export const MAX_ITEMS = 100;
export const MAX_QUANTITY = 10_000;
/** 1 000 000.00 in minor units. */
export const MAX_UNIT_PRICE_CENTS = 100_000_000;
/** An order's total must fit GraphQL's Int (32-bit): 21 474 836.47 in a 2-decimal currency. */
export const MAX_TOTAL_CENTS = 2_147_483_647;

/** A well-formed but unknown code such as `ABC` is refused. */
const CURRENCIES: ReadonlySet<string> = new Set(CURRENCY_CODES);

const upper = ({ value }: { value: unknown }) =>
  typeof value === 'string' ? value.trim().toUpperCase() : value;

export const SkuRules = () =>
  applyDecorators(
    ApiProperty({
      minLength: 1,
      maxLength: 64,
      pattern: '^[A-Za-z0-9._:/-]+$',
      example: 'BOOK-0042',
    }),
    IsString(),
    Length(1, 64),
    Matches(/^[A-Za-z0-9._:/-]+$/, {
      message: 'sku may contain letters, digits and . _ : / - only',
    }),
  );

export const QuantityRules = () =>
  applyDecorators(
    ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_QUANTITY, example: 2 }),
    IsInt(),
    Min(1),
    Max(MAX_QUANTITY),
  );

export const UnitPriceRules = () =>
  applyDecorators(
    ApiProperty({ type: 'integer', minimum: 0, maximum: MAX_UNIT_PRICE_CENTS, example: 1250 }),
    IsInt(),
    Min(0),
    Max(MAX_UNIT_PRICE_CENTS),
  );

export const CurrencyRules = () =>
  applyDecorators(
    // the document gives the canonical (upper-case) codes; the server also accepts them in lower
    // case and with surrounding spaces, and stores them in upper case
    ApiProperty({
      type: 'string',
      enum: [...CURRENCY_CODES],
      enumName: 'Currency',
      description: 'ISO 4217 code. Also accepted in lower case; stored in upper case.',
      example: 'EUR',
    }),
    Transform(upper),
    IsString(),
    IsIn([...CURRENCIES], { message: 'currency must be an ISO 4217 code such as EUR or USD' }),
  );

export const StatusRules = () =>
  applyDecorators(
    ApiProperty({ enum: ORDER_STATUSES, enumName: 'OrderStatus', example: 'paid' }),
    IsIn(ORDER_STATUSES, { message: `status must be one of ${ORDER_STATUSES.join(', ')}` }),
  );
