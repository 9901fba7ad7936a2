import type { PostResponse } from './dto/post.response.js';
import type { Post } from './post.js';

export interface PostRow {
  id: string;
  author_id: string;
  title: string;
  body: string;
  created_at: string;
  updated_at: string;
}

export const POST_COLUMNS = 'id, author_id, title, body, created_at, updated_at';

/** A post value; `content` (the body's old name) is always set from `body` (here and in postFromRow). */
export function postOf(fields: Omit<Post, 'content'>): Post {
  return { ...fields, content: fields.body };
}

export function postFromRow(row: PostRow): Post {
  return {
    id: row.id,
    authorId: row.author_id,
    title: row.title,
    body: row.body,
    content: row.body,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** REST body of a post (snake_case). */
export function toRestPost(post: Post): PostResponse {
  return {
    id: post.id,
    author_id: post.authorId,
    title: post.title,
    body: post.body,
    created_at: post.createdAt,
    updated_at: post.updatedAt,
  };
}
